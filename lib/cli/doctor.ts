// `reins doctor`: what reins would use and whether it can: the data root, its owners and modes
// (what it refuses to use, and with --repair what it tightens), the sandbox in force, the harness
// programs, the platform settings (never their secret values).
import { importLazily } from "../core/lazy_import.ts";
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UntrustedFileError } from "../core/trust.ts";
import {
  configTrustProblem,
  HARNESS_DRIVERS,
  harnessProgram,
  type Settings,
} from "../core/config.ts";
import { describeError } from "../core/errors.ts";
import { auditDataRoot, type Finding, type Repair, repairDataRoot } from "../core/audit.ts";
import { VERSION } from "../core/version.ts";
import { sandboxInForce, sandboxLines } from "../core/sandbox_in_force.ts";
import { agentStart } from "../core/process_group.ts";
import { assertNever } from "../core/assert_never.ts";
import { pendingReports } from "../platform/pending.ts";
import { DataRoot } from "../store/data_root.ts";

export const usage = "reins doctor [--repair]";
export const description =
  "Checks the data root (creating it 0700 when missing) and lists what in it another user owns, " +
  "others may write (reins refuses to use those), others may read, or links out of it. With " +
  "--repair it tightens what you own to 0600 files and 0700 directories and removes context " +
  "sessions others could have written (their next turn starts afresh); another user's files and " +
  "links are left for you. Also shows the permissions in force, looks for the harness programs " +
  "and says which platform settings are set.";
export const flags = defineFlags({
  repair: {
    type: "boolean",
    description: "tighten modes of what you own; drop untrusted context sessions",
  },
});
type Flags = typeof flags;

interface ProgramCheck {
  driver: string;
  program: string;
  allowed: boolean;
  found: boolean;
  version: string | null;
  error: string | null;
}

async function checkProgram(driver: string, program: string): Promise<ProgramCheck> {
  try {
    const output = await new Deno.Command(program, {
      args: ["--version"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(10_000),
    }).output();
    const version = new TextDecoder().decode(output.stdout).trim().split("\n")[0] || null;
    return { driver, program, allowed: true, found: true, version, error: null };
  } catch (error) {
    const refused = error instanceof Deno.errors.NotCapable;
    const missing = error instanceof Deno.errors.NotFound;
    return {
      driver,
      program,
      allowed: !refused,
      found: false,
      version: null,
      error: refused
        ? "not allowed by the sandbox"
        : missing
        ? "not found on PATH"
        : describeError(error),
    };
  }
}

function modeOf(path: string): string | null {
  try {
    const mode = Deno.statSync(path).mode;
    return mode === null ? null : (mode & 0o777).toString(8).padStart(4, "0");
  } catch {
    return null;
  }
}

/** The OpenTelemetry export: where traces go, whether runs export themselves, what waits. */
async function otelReport(
  settings: Settings,
  /** Null when the data root cannot be used. */
  root: DataRoot | null,
  query: (descriptor: Deno.PermissionDescriptor) => string,
) {
  const { exportSettings } = await importLazily<typeof import("../otel/target.ts")>(
    "otel/target.ts",
  );
  const { waitingExports } = await importLazily<typeof import("../otel/outbox.ts")>(
    "otel/outbox.ts",
  );
  const exporting = exportSettings(settings.otel);
  const target = exporting.target;
  const waiting = root === null ? null : waitingExports(root);
  return {
    endpoint: target?.url ?? null,
    source: target?.source ?? null,
    exportOnSettle: exporting.onSettle,
    content: exporting.content,
    serviceName: exporting.serviceName,
    collectorHost: target ? query({ name: "net", host: new URL(target.url).host }) : null,
    problems: [...exporting.warnings, ...(exporting.unusable ? [exporting.unusable] : [])],
    pendingExports: waiting?.pending.length ?? null,
    refusedExports: waiting?.refused.length ?? null,
    unreadableExports: waiting?.unreadable ?? [],
  };
}

function otelLines(otel: Awaited<ReturnType<typeof otelReport>>): string[] {
  const lines = [
    otel.endpoint === null
      ? "otel         no endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): runs are exported only by reins export otel"
      : `otel         ${otel.endpoint} (from ${otel.source}); on settle: ${
        otel.exportOnSettle ? "yes" : "no"
      }; content: ${otel.content ? "yes" : "no"}; sandbox net: ${otel.collectorHost}`,
    ...otel.problems.map((problem) => `             ${problem}`),
  ];
  if (otel.pendingExports) {
    lines.push(
      `outbox       ${otel.pendingExports} trace export(s) pending: reins export otel --pending sends them`,
    );
  }
  if (otel.refusedExports) {
    lines.push(
      `outbox       ${otel.refusedExports} trace export(s) refused by the collector (outbox/otlp/)`,
    );
  }
  lines.push(...otel.unreadableExports.map((line) => `outbox       unreadable: ${line}`));
  return lines;
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  let settings: Settings;
  try {
    settings = await ctx.settings();
  } catch (error) {
    // An untrusted config file is one of the things doctor reports: go on without it.
    if (!(error instanceof UntrustedFileError)) throw error;
    settings = await ctx.settings({ skipConfigFile: true });
  }
  const existed = modeOf(ctx.home) !== null;
  using root = new DataRoot(ctx.home);
  let rootError: string | null = null;
  let findings: Finding[] = [];
  let repair: Repair | null = null;
  try {
    if (!existed) root.ensureDir(root.home);
    findings = auditDataRoot(ctx.home);
    if (ctx.flags.repair) {
      repair = repairDataRoot(findings);
      findings = auditDataRoot(ctx.home);
    }
  } catch (error) {
    rootError = describeError(error);
  }
  const configProblem = configTrustProblem(settings.configPath);
  const query = (descriptor: Deno.PermissionDescriptor) =>
    Deno.permissions.querySync(descriptor).state === "granted" ? "granted" : "denied";
  const sandbox = sandboxInForce({
    home: ctx.home,
    cwd: Deno.cwd(),
    hosts: [settings.platform.url, settings.openai.baseUrl],
    programs: HARNESS_DRIVERS.map((driver) => harnessProgram(settings, driver)),
  });
  const permissions = {
    readDataRoot: query({ name: "read", path: ctx.home }),
    writeDataRoot: query({ name: "write", path: ctx.home }),
    readAnywhere: query({ name: "read" }),
    netAnywhere: query({ name: "net" }),
    runAnything: query({ name: "run" }),
    envAll: query({ name: "env" }),
    platformHost: settings.platform.url
      ? query({ name: "net", host: new URL(settings.platform.url).host })
      : null,
  };
  const programs = await Promise.all(
    HARNESS_DRIVERS.map((driver) => checkProgram(driver, harnessProgram(settings, driver))),
  );
  const outbox = rootError ? null : pendingReports(root);
  const otel = await otelReport(settings, rootError === null ? root : null, query);
  const { confinementProblem } = await importLazily<typeof import("../confine/probe.ts")>(
    "confine/probe.ts",
  );
  const confineProblem = await confinementProblem();
  const confine = {
    works: confineProblem === null,
    problem: confineProblem,
    enabled: settings.confine.enabled,
  };
  const report = {
    version: VERSION,
    deno: Deno.version.deno,
    dataRoot: {
      path: ctx.home,
      source: settings.homeSource,
      existed,
      mode: modeOf(ctx.home),
      /** What is wrong now (after --repair, what it left). */
      findings,
      /** With --repair: what it tightened and removed; null without. */
      repair,
      /** Paths --repair tightened (kept for scripts that read it). */
      tightened: repair?.tightened ?? [],
      error: rootError,
    },
    config: {
      path: settings.configPath,
      exists: modeOf(settings.configPath) !== null,
      untrusted: configProblem,
    },
    permissions,
    sandbox,
    /** How agents become process-group leaders: the setsid trampoline, or a fork of reins. */
    agentStart: agentStart(),
    programs,
    platform: {
      url: settings.platform.url,
      apiKeySet: settings.platform.apiKey !== null,
      secretKeySet: settings.platform.secretKey !== null,
      workspaceId: settings.platform.workspaceId,
      jobId: settings.platform.jobId,
      pendingReports: outbox?.pending.length ?? null,
      refusedReports: outbox?.refused.length ?? null,
      unreadableReports: outbox?.unreadable ?? [],
    },
    otel,
    confine,
  };
  if (ctx.io.jsonMode) {
    ctx.io.json(report);
    return rootError ? 6 : 0;
  }
  const yes = (value: boolean) => value ? "yes" : "no";
  const lines = [
    `reins ${VERSION} on Deno ${Deno.version.deno}`,
    `data root    ${ctx.home} (from ${settings.homeSource}; ${
      existed ? "existed" : "created"
    }, mode ${report.dataRoot.mode ?? "?"})`,
    ...dataRootLines(ctx.home, findings, repair),
    ...(rootError ? [`             unusable: ${rootError}`] : []),
    `config       ${settings.configPath} (${report.config.exists ? "present" : "absent"}${
      configProblem ? `; refused: ${configProblem}` : ""
    })`,
    ...sandboxLines(sandbox).map((line, i) => `${i === 0 ? "sandbox      " : INDENT}${line}`),
    `agents       start ${report.agentStart.detail}`,
    ...programs.map((p) =>
      `harness      ${p.driver.padEnd(9)}${p.program}: ${
        p.found ? `found${p.version ? ` (${p.version})` : ""}` : p.error
      }`
    ),
    `platform     ${settings.platform.url ?? "not set (HARNESS_PLATFORM_URL)"}; api key set: ${
      yes(report.platform.apiKeySet)
    }; secret key set: ${yes(report.platform.secretKeySet)}`,
    ...(outbox && outbox.pending.length
      ? [
        `outbox       ${outbox.pending.length} report(s) pending: reins report --pending sends them`,
      ]
      : []),
    ...(outbox?.pending ?? []).map((r) =>
      `             ${r.id}${r.name ? ` (${r.name})` : ""}: ${r.reason ?? "not sent yet"}`
    ),
    ...(outbox && outbox.refused.length
      ? [`outbox       ${outbox.refused.length} report(s) refused by the platform (see outbox/)`]
      : []),
    ...(outbox?.unreadable ?? []).map((line) => `outbox       unreadable: ${line}`),
    ...otelLines(otel),
    confine.works
      ? `confine      works here (bubblewrap, socat): --confine runs agents confined${
        confine.enabled ? "; on for every turn (confine.enabled)" : ""
      }`
      : `confine      does not work here: ${confine.problem}`,
  ];
  ctx.io.print(lines.join("\n"));
  return rootError ? 6 : 0;
}

const INDENT = "             ";

function dataRootLines(
  home: string,
  findings: readonly Finding[],
  repair: Repair | null,
): string[] {
  const shown = (path: string) => path === home ? "(the data root)" : path.slice(home.length + 1);
  const lines: string[] = [];
  if (repair !== null) {
    lines.push(
      `${INDENT}repaired: ${repair.tightened.length} mode(s) tightened to 0600/0700, ` +
        `${repair.removed.length} untrusted context session(s) removed`,
    );
    for (const path of repair.removed) {
      lines.push(`${INDENT}removed ${shown(path)}: its context's next turn starts afresh`);
    }
    for (const failed of repair.failed) {
      lines.push(`${INDENT}could not repair ${shown(failed.path)}: ${failed.reason}`);
    }
  }
  const fixable = findings.filter((f) => f.kind === "writable" || f.kind === "readable");
  for (const finding of findings) {
    switch (finding.kind) {
      case "foreign":
        lines.push(
          `${INDENT}untrusted ${shown(finding.path)}: ${finding.reason}; not used, and ` +
            "--repair cannot change that: remove it, or chown it to you",
        );
        break;
      case "writable":
        lines.push(`${INDENT}untrusted ${shown(finding.path)}: ${finding.reason}; not used`);
        break;
      case "readable":
        lines.push(`${INDENT}not private ${shown(finding.path)}: ${finding.reason}`);
        break;
      case "link":
        lines.push(`${INDENT}not followed ${shown(finding.path)}: ${finding.reason}`);
        break;
      default:
        assertNever(finding.kind);
    }
  }
  if (fixable.length > 0) {
    lines.push(
      `${INDENT}${fixable.length} mode(s) wider than 0600/0700: reins doctor --repair tightens ` +
        "them (check an untrusted file first: once tightened, reins uses it)",
    );
  } else if (findings.length === 0 && repair === null) {
    lines.push(`${INDENT}every file 0600 and every directory 0700, all yours`);
  }
  return lines;
}
