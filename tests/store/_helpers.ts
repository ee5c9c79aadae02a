// Shared by the store tests: a data root in a temp dir with its store open (closed before the
// directory is removed), a run's init, and small readers of the files as they are on disk.
import type { RunInit } from "../../lib/store/run_writer.ts";
import { openStore, type Store } from "../../lib/store/store.ts";

export const REPO = new URL("../../", import.meta.url).pathname;
export const CHILD = new URL("./_child.ts", import.meta.url).pathname;

export interface StoreHome extends AsyncDisposable {
  /** The data root (not created until something is written). */
  path: string;
  /** The store of `path`, open for the test's life. */
  store: Store;
  /** Another store of the same data root, as a second process would have (closed at the end). */
  reopen(): Store;
}

export async function storeHome(): Promise<StoreHome> {
  const parent = await Deno.makeTempDir({ prefix: "reins-store-" });
  const path = `${parent}/home`;
  const stores = [openStore(path)];
  return {
    path,
    store: stores[0],
    reopen() {
      const store = openStore(path);
      stores.push(store);
      return store;
    },
    async [Symbol.asyncDispose]() {
      for (const store of stores) store.close();
      await Deno.remove(parent, { recursive: true }).catch(() => {});
    },
  };
}

export function runInit(overrides: Partial<RunInit> = {}): RunInit {
  return {
    sessionId: "session-1",
    contextId: "ctx-1",
    harness: "reins",
    driver: "loop",
    trigger: "cli",
    cwd: "/work/project",
    goal: "fix the tests",
    ...overrides,
  };
}

export function modeOf(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

/** The events file's lines as raw text (without the final newline's empty string). */
export function logLines(home: string, runId: string): string[] {
  const text = Deno.readTextFileSync(`${home}/runs/${runId}/events.jsonl`);
  return text.split("\n").filter((line) => line !== "");
}

export function recordOnDisk(home: string, runId: string): Record<string, unknown> {
  return JSON.parse(Deno.readTextFileSync(`${home}/runs/${runId}/run.json`));
}

/** Runs tests/store/_child.ts with `args`, to completion; throws with its stderr on failure. */
export async function runChild(args: string[]): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", "--config", `${REPO}deno.json`, CHILD, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  if (!output.success) throw new Error(`child ${args.join(" ")} failed: ${stderr}`);
  return new TextDecoder().decode(output.stdout);
}

/** Starts tests/store/_child.ts with `args`, stdin and stdout piped. */
export function spawnChild(args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", "--config", `${REPO}deno.json`, CHILD, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Reads the child's stdout until a whole line arrives; returns it and the rest of the reader. */
export async function readLine(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  buffered = { text: "" },
): Promise<string> {
  const decoder = new TextDecoder();
  while (!buffered.text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the child closed stdout; had: ${JSON.stringify(buffered.text)}`);
    buffered.text += decoder.decode(value, { stream: true });
  }
  const at = buffered.text.indexOf("\n");
  const line = buffered.text.slice(0, at);
  buffered.text = buffered.text.slice(at + 1);
  return line;
}
