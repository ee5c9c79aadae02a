// Shared pieces of the loop's tests: a sink that validates and keeps events (as the recorder
// would), a DriverInput over a real temp directory, and a decisions object the test controls.
import { loadSettings } from "../../../lib/core/config.ts";
import type { Decision, Decisions, DriverInput } from "../../../lib/drivers/driver.ts";

export { MemorySink } from "../_helpers.ts";

export const noDecisions: Decisions = {
  waitForApproval() {
    return Promise.reject(new Error("no approval expected"));
  },
  waitForAnswer() {
    return Promise.reject(new Error("no question expected"));
  },
};

/** Answers approvals with `decide(approvalId)`, recording the ids asked about. */
export function fakeDecisions(decide: (approvalId: string) => Decision | Promise<Decision>) {
  const asked: string[] = [];
  const decisions: Decisions = {
    async waitForApproval(approvalId) {
      asked.push(approvalId);
      return await decide(approvalId);
    },
    waitForAnswer() {
      return Promise.reject(new Error("no question expected"));
    },
  };
  return { decisions, asked };
}

export async function tempDir(prefix = "reins-loop-"): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix }));
}

export async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A DriverInput for the loop in `cwd`; `model` and `baseUrl` make its agent spec. */
export function driverInput(
  cwd: string,
  overrides: Partial<DriverInput> & { model?: string | null; baseUrl?: string | null } = {},
): DriverInput {
  const { model = null, baseUrl = null, ...rest } = overrides;
  return {
    prompt: "do the thing",
    cwd,
    runId: "run-1",
    sessionId: "session-1",
    contextId: null,
    resume: null,
    history: [],
    approval: "auto",
    budget: {},
    agent: { kind: "loop", model, baseUrl },
    env: {},
    settings: loadSettings({ REINS_HOME: `${cwd}/.home`, HOME: cwd }),
    decisions: noDecisions,
    kill: new AbortController().signal,
    ...rest,
  };
}

/** Writes a mock script and returns its path. */
export async function writeScript(dir: string, responses: unknown): Promise<string> {
  const path = `${dir}/script.json`;
  await Deno.writeTextFile(path, JSON.stringify(responses, null, 2));
  return path;
}
