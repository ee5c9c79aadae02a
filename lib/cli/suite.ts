// `reins suite SUBCOMMAND`: define, run, judge, resume and report scenario suites (docs/suites.md).
// This file parses the subcommand and its flags and hands over to one module per subcommand, loaded
// only when that subcommand runs.
import { importLazily } from "../core/lazy_import.ts";
import { flags, type SuiteContext } from "./suite_flags.ts";
import { UsageError } from "../core/errors.ts";
import { nearest } from "../core/suggest.ts";

export const usage = [
  "reins suite run FILE [--jobs N] [--filter GLOB] [--agent NAME]... [--epochs K] [--resume [ID]]",
  "                [--rerun failed|errors --from ID] [--plan FILE [--shard I/N]]",
  "                [--reuse ID] [--junit FILE] [--no-report] [--json]",
  "       reins suite validate FILE",
  "       reins suite show [ID] [--junit FILE]",
  "       reins suite list [--limit N]",
  "       reins suite plan FILE --shards N --out FILE [--filter GLOB] [--agent NAME]... [--epochs K]",
  "                [--no-report]",
  "       reins suite merge DIR... [--junit FILE]",
  "       reins suite compare A B [--agent X [--agent Y]] [--fail-on regressed|any] [--markdown]",
  "       reins suite compare ID --agent X --agent Y",
  "       reins suite regrade ID [--junit FILE] [--json]",
].join("\n");

export const description =
  "Runs a suite file (YAML or JSON: scenarios, each a persona in a situation with scripted turns " +
  "or a simulated user, and the checks that judge it) against an agent — or, with agents: in " +
  "the file, against each of its named agents (a matrix; --agent picks some), --epochs K times " +
  "each (--repeat N is the same) — `--jobs` scenarios at " +
  "once, each in a fresh copy of the workdir and as one context, so its turns continue one " +
  "session. Prints a line as each scenario starts and ends, then a table; exit 0 when every " +
  "scenario passed, 1 when any failed or could not run, 2 for a suite file that cannot be used. " +
  "State is kept under suites/ in the data root: --resume plays only what a crash or Ctrl-C left " +
  "unfinished, --rerun failed|errors --from ID plays a suite run's failures again, --reuse ID " +
  "answers each harness scenario's model calls from suite run ID's recordings where the " +
  "requests match (the rest go to the model; checks and judges run anew). When the " +
  "platform is configured the suite run is reported as it goes (--no-report: not). plan, run " +
  "--plan --shard and merge spread a suite over machines (a Kubernetes Indexed Job, a CI matrix). " +
  "compare A B tells, scenario by scenario, what regressed, improved, stayed or is flaky from suite " +
  "run A to B (or agent X to Y), with the checks that flipped; exit 1 on a significant regression. " +
  "regrade ID runs the suite file's checks and judges anew on suite run ID's recordings and end " +
  "states, with no agent, into a new suite run.";

export { flags };

const SUBCOMMANDS = [
  "run",
  "validate",
  "show",
  "list",
  "plan",
  "merge",
  "compare",
  "regrade",
] as const;
type Subcommand = typeof SUBCOMMANDS[number];

/** The flags each subcommand takes (the global ones go with all). */
const ALLOWED: Record<Subcommand, readonly (keyof typeof flags)[]> = {
  run: [
    "jobs",
    "filter",
    "repeat",
    "epochs",
    "agent",
    "resume",
    "rerun",
    "from",
    "plan",
    "shard",
    "junit",
    "no-report",
    "reuse",
    "confine",
    "allow-host",
  ],
  validate: [],
  show: ["junit"],
  list: ["limit"],
  plan: ["shards", "out", "filter", "repeat", "epochs", "agent", "no-report"],
  merge: ["junit"],
  compare: ["agent", "fail-on", "markdown"],
  regrade: ["junit"],
};

export async function run(ctx: SuiteContext): Promise<number> {
  const [given, ...rest] = ctx.positionals;
  if (given === undefined) {
    throw new UsageError(
      "reins suite needs a subcommand: run, validate, show, list, plan, merge, compare or regrade",
      {
        hint: "reins suite run FILE plays a suite file; see reins suite --help",
      },
    );
  }
  if (!(SUBCOMMANDS as readonly string[]).includes(given)) {
    const guess = nearest(given, SUBCOMMANDS);
    throw new UsageError(`Unknown subcommand 'reins suite ${given}'`, {
      hint: guess ? `did you mean 'reins suite ${guess}'?` : "see reins suite --help",
    });
  }
  const sub = given as Subcommand;
  for (const name of Object.keys(flags) as (keyof typeof flags)[]) {
    const value: unknown = ctx.flags[name];
    const set = value !== undefined && value !== false &&
      !(Array.isArray(value) && value.length === 0);
    if (set && !ALLOWED[sub].includes(name)) {
      throw new UsageError(`--${name} does not go with 'reins suite ${sub}'`, {
        hint: `see reins suite --help`,
      });
    }
  }
  const sub_ctx = { ...ctx, positionals: rest };
  switch (sub) {
    case "run":
      return await (await importLazily<typeof import("./suite_run.ts")>("cli/suite_run.ts"))
        .suiteRun(sub_ctx);
    case "validate":
      return await (await importLazily<typeof import("./suite_run.ts")>("cli/suite_run.ts"))
        .suiteValidate(sub_ctx);
    case "show":
      return await (await importLazily<typeof import("./suite_show.ts")>("cli/suite_show.ts"))
        .suiteShow(sub_ctx);
    case "list":
      return await (await importLazily<typeof import("./suite_show.ts")>("cli/suite_show.ts"))
        .suiteList(sub_ctx);
    case "plan":
      return await (await importLazily<typeof import("./suite_plan.ts")>("cli/suite_plan.ts"))
        .suitePlan(sub_ctx);
    case "merge":
      return await (await importLazily<typeof import("./suite_plan.ts")>("cli/suite_plan.ts"))
        .suiteMerge(sub_ctx);
    case "compare":
      return await (await importLazily<typeof import("./suite_compare.ts")>("cli/suite_compare.ts"))
        .suiteCompare(sub_ctx);
    case "regrade":
      return await (await importLazily<typeof import("./suite_regrade.ts")>("cli/suite_regrade.ts"))
        .suiteRegrade(sub_ctx);
  }
}
