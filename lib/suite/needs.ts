// What a suite asks of the sandbox: the files it reads (workdirs, mock models), the programs it
// starts (exec agents, and sh for setup commands and command checks) and the hosts it reaches
// (a simulated user's or a judge's baseUrl). The launcher of a checkout grants them
// (scripts/invocation.ts); `reins suite run` checks them before it starts anything. It does not
// say what the harness drivers need: their programs are the sandbox's own (scripts/permissions.ts).
import type { SandboxNeed } from "../core/mod.ts";
import { splitCommandLine } from "../core/command_line.ts";
import { cellSpec, type Suite } from "./load.ts";

/** The shell every setup command and command check runs through (lib/suite/shell.ts). */
export const SUITE_SHELL = "sh";

/** The host and port a URL reaches (its scheme's port when it names none). */
function hostOf(url: string | undefined): string | null {
  if (url === undefined) return null;
  try {
    const { hostname, port, protocol } = new URL(url);
    return `${hostname}:${port || (protocol === "https:" ? "443" : "80")}`;
  } catch {
    return null;
  }
}

/**
 * Every need of the scenarios `which` keeps (default: all but the skipped ones), each once, in
 * the file's order.
 */
export function suiteNeeds(
  suite: Suite,
  which: (key: string) => boolean = () => true,
): SandboxNeed[] {
  const needs = new Map<string, SandboxNeed>();
  const add = (kind: SandboxNeed["kind"], target: string | null, by: string) => {
    if (target === null || target === "") return;
    const id = `${kind}\0${target}`;
    if (!needs.has(id)) needs.set(id, { kind, target, by });
  };
  const mockFile = (spec: string | null) => spec?.startsWith("mock:") ? spec.slice(5) : null;
  for (const scenario of suite.scenarios) {
    if (scenario.skip !== null || !which(scenario.key)) continue;
    const at = (what: string) => `scenarios[${scenario.index}] (${scenario.key}): ${what}`;
    // Each agent of a matrix plays it: what each runs and reads.
    const cells = scenario.perAgent === null
      ? [{ spec: scenario, where: at }]
      : Object.keys(scenario.perAgent).map((agent) => ({
        spec: cellSpec(scenario, agent),
        where: (what: string) => `agents.${agent}: ${what}`,
      }));
    for (const { spec, where } of cells) {
      if (spec.exec !== null) {
        let program: string | null = null;
        try {
          program = splitCommandLine(spec.exec)[0];
        } catch {
          // An exec the command driver cannot split fails that scenario on its own.
        }
        add("run", program, where("exec"));
      }
      if (spec.driver === "loop") add("read", mockFile(spec.model), where("model"));
    }
    if (scenario.setup.length > 0) add("run", SUITE_SHELL, at("setup"));
    if (scenario.checks.some((check) => check.kind === "command")) {
      add("run", SUITE_SHELL, at("a command check"));
    }
    add("read", scenario.workdir, at("workdir"));
    if (scenario.conversation.kind === "simulated") {
      const user = scenario.conversation.user;
      add("read", mockFile(user.model), at("user.model"));
      add("net", hostOf(user.baseUrl), at("user.baseUrl"));
    }
    for (const check of scenario.checks) {
      if (check.kind !== "judge") continue;
      add("read", mockFile(check.judge.model), at(`the judge ${JSON.stringify(check.name)}`));
      add("net", hostOf(check.judge.baseUrl), at(`the judge ${JSON.stringify(check.name)}`));
    }
  }
  return [...needs.values()];
}
