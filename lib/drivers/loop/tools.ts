// The loop's tools: read_file, write_file, list_files and run_command, all confined to the
// working directory. Every failure (bad arguments, a path outside, a missing file, a command
// that exits non-zero) is an outcome the model reads; only a bug in reins throws from here.
// Approval and recording are the loop's business, not the tools'.
import type { Confinement } from "../../confine/mod.ts";
import { z } from "zod";
import { formatIssue, type ToolCall } from "../../store/contracts.ts";
import { ConfinementError, confinePath } from "./confine.ts";
import type { ToolSpec } from "../../model/mod.ts";
import type { AgentProcess } from "../../core/mod.ts";
import { runShellCommand } from "./run_command.ts";
import { type FileHead, looksBinary, NotAFileError, readHead } from "./read_head.ts";

export type ToolResult =
  | { ok: true; result: unknown }
  | { ok: false; error: string; result?: unknown };

export interface ToolboxOptions {
  /** Default and upper bound of run_command's timeout. */
  commandTimeoutMs?: number;
  maxCommandTimeoutMs?: number;
  /** Bytes of stdout and of stderr kept from a command. */
  maxCommandOutputBytes?: number;
  /** Bytes of a file read_file returns. */
  maxReadBytes?: number;
  /** Entries list_files returns. */
  maxListEntries?: number;
  /** Extra environment for commands. */
  env?: Record<string, string>;
  /** Aborted when stopping must not wait: a running command is killed at once (SIGKILL). */
  kill?: AbortSignal;
  /** Told of each command's process (the leader of a group of its own), to keep with the run. */
  onProcess?: (agent: AgentProcess) => void;
  /**
   * Whether to offer run_command. Default: only when the sandbox lets reins run `sh` (a binary
   * built without REINS_ALLOW_RUN=sh does not; Deno cannot confine what `sh -c` runs).
   */
  shell?: boolean;
  /**
   * The turn's confinement (--confine): run_command runs under it, and is offered whatever the
   * sandbox says of `sh`, as bubblewrap, not the sandbox, confines what it runs.
   */
  confine?: Confinement | null;
}

/** Whether this process may start `sh` (its sandbox lists it, or runs anything). */
export function shellAllowed(): boolean {
  return Deno.permissions.querySync({ name: "run", command: "sh" }).state === "granted";
}

export interface Toolbox {
  readonly specs: readonly ToolSpec[];
  run(call: ToolCall, signal: AbortSignal): Promise<ToolResult>;
}

/** A failure the model should read, with an optional result (a command's output). */
class ToolFailure extends Error {
  constructor(message: string, readonly result?: unknown) {
    super(message);
  }
}

interface ToolContext {
  root: string;
  signal: AbortSignal;
  options: Required<Omit<ToolboxOptions, "env" | "kill" | "shell" | "onProcess" | "confine">> & {
    env: Record<string, string>;
  };
  kill: AbortSignal | undefined;
  onProcess: ((agent: AgentProcess) => void) | undefined;
  confine: Confinement | null;
}

interface ToolDefinition<S extends z.ZodType> {
  description: string;
  args: S;
  run(args: z.infer<S>, context: ToolContext): Promise<unknown>;
}

function defineTool<S extends z.ZodType>(definition: ToolDefinition<S>): ToolDefinition<S> {
  return definition;
}

const TOOLS = {
  list_files: defineTool({
    description:
      "List the files in a directory of the working directory (directories end in '/'). " +
      "With recursive, list everything below it.",
    args: z.object({
      path: z.string().default(".").describe("directory, relative to the working directory"),
      recursive: z.boolean().default(false),
    }),
    async run(args, context) {
      const { path, relative } = await confinePath(context.root, args.path);
      const listing = new Listing(context.options.maxListEntries);
      try {
        await listing.walk(path, "", args.recursive);
      } catch (error) {
        throw new ToolFailure(`Cannot list ${JSON.stringify(relative)}: ${fsReason(error)}`);
      }
      return listing.text();
    },
  }),
  read_file: defineTool({
    description: "Read a text file of the working directory (long files are cut; it says so).",
    args: z.object({
      path: z.string().describe("file, relative to the working directory"),
    }),
    async run(args, context) {
      const { path, relative } = await confinePath(context.root, args.path);
      const limit = context.options.maxReadBytes;
      let head: FileHead;
      try {
        head = await readHead(path, limit);
      } catch (error) {
        throw new ToolFailure(`Cannot read ${JSON.stringify(relative)}: ${fsReason(error)}`);
      }
      if (looksBinary(head.bytes)) {
        throw new ToolFailure(
          `Cannot read ${JSON.stringify(relative)}: it is a binary file (${head.size} bytes, ` +
            "a NUL byte near its start); read_file shows text files",
        );
      }
      const text = new TextDecoder().decode(head.bytes);
      if (!head.cut) return text;
      return `${text}\n[… truncated: showing ${head.bytes.length} of ${head.size} bytes]`;
    },
  }),
  write_file: defineTool({
    description:
      "Write a text file in the working directory, replacing it if it exists and creating " +
      "missing parent directories.",
    args: z.object({
      path: z.string().describe("file, relative to the working directory"),
      content: z.string(),
    }),
    async run(args, context) {
      const { path, relative } = await confinePath(context.root, args.path);
      const bytes = new TextEncoder().encode(args.content);
      try {
        const parent = path.slice(0, path.lastIndexOf("/"));
        if (parent) await Deno.mkdir(parent, { recursive: true });
        await Deno.writeFile(path, bytes);
      } catch (error) {
        throw new ToolFailure(`Cannot write ${JSON.stringify(relative)}: ${fsReason(error)}`);
      }
      return `Wrote ${bytes.length} bytes to ${relative}`;
    },
  }),
  run_command: defineTool({
    description:
      "Run a shell command (sh -c) in the working directory and return its exit code, stdout " +
      "and stderr. Output is capped; the command is stopped after its timeout.",
    args: z.object({
      command: z.string().min(1),
      timeoutSeconds: z.number().positive().optional(),
    }),
    async run(args, context) {
      const { commandTimeoutMs, maxCommandTimeoutMs, maxCommandOutputBytes } = context.options;
      const timeoutMs = Math.min(
        args.timeoutSeconds === undefined ? commandTimeoutMs : args.timeoutSeconds * 1000,
        maxCommandTimeoutMs,
      );
      let outcome;
      try {
        outcome = await runShellCommand(args.command, {
          cwd: context.root,
          timeoutMs,
          maxOutputBytes: maxCommandOutputBytes,
          env: context.options.env,
          signal: context.signal,
          kill: context.kill,
          onStarted: context.onProcess,
          confine: context.confine,
        });
      } catch (error) {
        throw new ToolFailure(`Cannot run the command: ${fsReason(error)}`);
      }
      const result = {
        exitCode: outcome.exitCode,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
      };
      if (outcome.timedOut) {
        throw new ToolFailure(`The command timed out after ${timeoutMs / 1000} s`, result);
      }
      if (outcome.signal !== null) {
        throw new ToolFailure(`The command was killed by ${outcome.signal}`, result);
      }
      if (outcome.exitCode !== 0) {
        throw new ToolFailure(`The command exited with code ${outcome.exitCode}`, result);
      }
      return result;
    },
  }),
} as const;

export type ToolName = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];

const DEFAULTS = {
  commandTimeoutMs: 60_000,
  maxCommandTimeoutMs: 600_000,
  maxCommandOutputBytes: 32 * 1024,
  maxReadBytes: 64 * 1024,
  maxListEntries: 1_000,
};

/** The tools for one working directory (absolute; it must exist). */
export async function createToolbox(cwd: string, options: ToolboxOptions = {}): Promise<Toolbox> {
  const root = await Deno.realPath(cwd);
  const { env, kill, shell, onProcess, confine, ...limits } = options;
  const offered = TOOL_NAMES.filter((name) =>
    name !== "run_command" || (shell ?? (confine ? true : shellAllowed()))
  );
  const settings = { ...DEFAULTS, ...withoutUndefined(limits), env: env ?? {} };
  const specs: ToolSpec[] = offered.map((name) => {
    const { $schema: _, ...parameters } = z.toJSONSchema(TOOLS[name].args, { io: "input" });
    return { name, description: TOOLS[name].description, parameters };
  });
  return {
    specs,
    async run(call, signal) {
      if (!(offered as string[]).includes(call.name)) {
        return {
          ok: false,
          error: `Unknown tool ${JSON.stringify(call.name)}: the tools are ${offered.join(", ")}`,
        };
      }
      const tool = TOOLS[call.name as ToolName] as ToolDefinition<z.ZodType>;
      const args = parseArgs(call.args);
      if (!args.ok) return { ok: false, error: args.error };
      const parsed = tool.args.safeParse(args.value);
      if (!parsed.success) {
        return {
          ok: false,
          error: `Invalid arguments for ${call.name}: ${formatIssue(parsed.error, "args")}`,
        };
      }
      try {
        return {
          ok: true,
          result: await tool.run(parsed.data, {
            root,
            signal,
            kill,
            onProcess,
            confine: confine ?? null,
            options: settings,
          }),
        };
      } catch (error) {
        if (error instanceof ToolFailure) {
          return error.result === undefined
            ? { ok: false, error: error.message }
            : { ok: false, error: error.message, result: error.result };
        }
        if (error instanceof ConfinementError) return { ok: false, error: error.message };
        throw error;
      }
    },
  };
}

/**
 * What list_files shows, at most `limit` entries in name order: each directory is read keeping
 * only the first names it can still show (the rest are counted), and no directory is entered
 * once the limit is reached, so a tree of a million files costs neither the memory nor the time
 * of walking it all.
 */
class Listing {
  readonly #lines: string[] = [];
  #more = 0;
  /** Directories left unread because the limit was reached: their entries are not counted. */
  #unread = false;

  constructor(readonly limit: number) {}

  async walk(dir: string, prefix: string, recursive: boolean): Promise<void> {
    const { first, total, dirs } = await firstEntries(dir, this.limit - this.#lines.length);
    this.#more += total - first.length;
    // A directory among the entries not kept holds entries that are not counted either.
    if (recursive && first.filter(isWalked).length < dirs) this.#unread = true;
    for (const entry of first) {
      const descend = recursive && isWalked(entry);
      if (this.#lines.length >= this.limit) {
        this.#more++;
        if (descend) this.#unread = true;
        continue;
      }
      const mark = entry.isDirectory ? "/" : entry.isSymlink ? "@" : "";
      this.#lines.push(`${prefix}${entry.name}${mark}`);
      if (descend) await this.walk(`${dir}/${entry.name}`, `${prefix}${entry.name}/`, true);
    }
  }

  text(): string {
    if (this.#lines.length === 0) return "(empty)";
    if (this.#more === 0 && !this.#unread) return this.#lines.join("\n");
    const more = this.#unread
      ? `at least ${this.#more} more entries not shown (directories past the limit were not read)`
      : `${this.#more} more entries not shown`;
    return `${this.#lines.join("\n")}\n[… ${more}]`;
  }
}

/** Whether a recursive listing enters `entry` (a directory, but not .git). */
function isWalked(entry: Deno.DirEntry): boolean {
  return entry.isDirectory && entry.name !== ".git";
}

/**
 * The `room` entries of `dir` that sort first by name, how many entries it has, and how many of
 * them a recursive listing would enter.
 */
async function firstEntries(
  dir: string,
  room: number,
): Promise<{ first: Deno.DirEntry[]; total: number; dirs: number }> {
  const first: Deno.DirEntry[] = [];
  let total = 0;
  let dirs = 0;
  for await (const entry of Deno.readDir(dir)) {
    total++;
    if (isWalked(entry)) dirs++;
    if (room <= 0) continue;
    if (first.length === room && !(entry.name < first[room - 1].name)) continue;
    // Binary insertion: in readdir's (hash) order few names beat the last kept one.
    let low = 0;
    let high = first.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (first[mid].name < entry.name) low = mid + 1;
      else high = mid;
    }
    first.splice(low, 0, entry);
    if (first.length > room) first.pop();
  }
  return { first, total, dirs };
}

// Models sometimes send the arguments as the JSON text itself.
function parseArgs(args: unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  if (args === undefined || args === null) return { ok: true, value: {} };
  if (typeof args !== "string") return { ok: true, value: args };
  try {
    return { ok: true, value: JSON.parse(args) };
  } catch (error) {
    return { ok: false, error: `Invalid arguments: not JSON (${(error as Error).message})` };
  }
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<
    T
  >;
}

/** A file-system error in words the model can act on. */
function fsReason(error: unknown): string {
  if (error instanceof NotAFileError) return error.message;
  if (error instanceof Deno.errors.NotFound) return "no such file or directory";
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  if (error instanceof Deno.errors.NotADirectory) return "not a directory";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.NotCapable) {
    return `refused by reins's sandbox (${error.message})`;
  }
  return error instanceof Error ? error.message : String(error);
}
