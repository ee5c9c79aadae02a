// Shared pieces of the harness drivers' tests (and of tests/interop/): a sink that validates and
// keeps events as the recorder would, a DriverInput over real directories, decisions the test
// controls, and a view of the events without their `native` lines for whole-object comparisons.
import { type HarnessDriver, loadSettings, type Settings } from "../../lib/core/config.ts";
import type { Decision, Decisions, DriverInput, EventSink } from "../../lib/drivers/driver.ts";
import { newId } from "../../lib/core/ids.ts";
import type { EventInput } from "../../lib/store/contracts.ts";
import { parseEventInput } from "../../lib/store/contract_runtime.ts";

/** Validates each event like the run store does and keeps it; a bad event throws, as there. */
export class MemorySink implements EventSink {
  readonly events: EventInput[] = [];
  emit(event: EventInput): void {
    const parsed = parseEventInput(event);
    if (!parsed.ok) throw new Error(`invalid ${event.type} event: ${parsed.reason}`);
    this.events.push(parsed.event);
  }
  types(): string[] {
    return this.events.map((event) => event.type);
  }
  ofType<T extends EventInput["type"]>(type: T): Extract<EventInput, { type: T }>[] {
    return this.events.filter((event): event is Extract<EventInput, { type: T }> =>
      event.type === type
    );
  }
  /** type + payload of each event, times replaced by "<time>", for exact comparisons. */
  plain(): { type: string; payload: unknown }[] {
    return this.events.map((event) => ({
      type: event.type,
      payload: JSON.parse(
        JSON.stringify(event.payload),
        (key, value) =>
          (key === "startedAt" || key === "finishedAt") && typeof value === "string"
            ? "<time>"
            : value,
      ),
    }));
  }
}

export const noDecisions: Decisions = {
  waitForApproval(approvalId) {
    return Promise.reject(new Error(`no approval expected, asked for ${approvalId}`));
  },
  waitForAnswer(questionId) {
    return Promise.reject(new Error(`no question expected, asked ${questionId}`));
  },
};

/** Answers approvals with `decide(approvalId)`, recording the ids asked about. */
export function fakeDecisions(
  decide: (approvalId: string, signal: AbortSignal) => Decision | Promise<Decision>,
): { decisions: Decisions; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    decisions: {
      async waitForApproval(approvalId, signal) {
        asked.push(approvalId);
        return await decide(approvalId, signal);
      },
      waitForAnswer() {
        return Promise.reject(new Error("no question expected"));
      },
    },
  };
}

/** Settings for a scratch data root, with the given harness driver settings. */
export function testSettings(
  home: string,
  drivers: Partial<Record<HarnessDriver, Partial<Settings["drivers"]["claude"]>>> = {},
  prices: Settings["prices"] = {},
): Settings {
  const settings = loadSettings({
    HOME: home,
    REINS_HOME: `${home}/.reins`,
    REINS_CONFIG: `${home}/none.json`,
  });
  for (const [name, value] of Object.entries(drivers)) {
    const driver = name as HarnessDriver;
    const defined = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
    settings.drivers[driver] = { ...settings.drivers[driver], ...defined, args: value.args ?? [] };
  }
  settings.prices = { ...prices };
  return settings;
}

let runCounter = 0;

/**
 * A DriverInput for one turn; `settings` and `cwd` are required, the rest has defaults. The agent
 * is the harness `harness` (default claude) with `idleTimeoutSeconds` (default null), unless
 * `agent` is given whole.
 */
export function driverInput(
  fields: Partial<DriverInput> & Pick<DriverInput, "settings" | "cwd"> & {
    harness?: HarnessDriver;
    idleTimeoutSeconds?: number | null;
  },
): DriverInput {
  runCounter++;
  const { harness = "claude", idleTimeoutSeconds = null, ...rest } = fields;
  return {
    prompt: "say hello",
    runId: `0190a0b0-0000-7000-8000-${String(runCounter).padStart(12, "0")}`,
    sessionId: newId(),
    contextId: null,
    resume: null,
    history: [],
    approval: "auto",
    budget: {},
    agent: { kind: "harness", driver: harness, idleTimeoutSeconds },
    env: {},
    decisions: noDecisions,
    kill: new AbortController().signal,
    ...rest,
  };
}

/** A real temp directory (symlinks resolved), removed on dispose. */
export async function scratchDir(prefix = "reins-drivers-"): Promise<
  { path: string } & AsyncDisposable
> {
  const path = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  };
}
