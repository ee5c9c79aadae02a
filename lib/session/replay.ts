// Replaying a recorded loop run: its `model.completed` payloads served in order as the model
// (`replay:RUN`), the decisions it recorded for its approvals, its working directory as the run
// found it (restored from the run's snapshot, else a copy of the directory as it is now), and
// the verdict — whether the replay did what the recording did, and where it first did not.
// Running the replay is the CLI's job (lib/cli/replay.ts); this module reads and compares.
import { newId } from "../core/ids.ts";
import { HARNESS_DRIVERS } from "../core/config.ts";
import { UsageError } from "../core/errors.ts";
import { joinPath } from "../core/paths.ts";
import { readManifest } from "../snapshot/manifest.ts";
import { describeSize } from "../snapshot/glance.ts";
import { PERMISSION_BITS, restoreSnapshot, SnapshotDamagedError } from "../snapshot/restore.ts";
import { nameExists } from "../snapshot/walk.ts";
import type { DataRoot, PayloadOf, RunEvent, RunRecord } from "../store/mod.ts";
import { readEvents } from "../store/event_log.ts";
import { createLink } from "../core/sandbox.ts";
import { resolveRun } from "../store/lookup.ts";

/** One recorded model answer: what `replay:RUN` serves, in order. */
export type RecordedOutput = PayloadOf<"model.completed">;

/** The model answers a run recorded, oldest first, leaving out what arrived after it settled. */
export function recordedOutputs(events: readonly RunEvent[]): RecordedOutput[] {
  const outputs: RecordedOutput[] = [];
  for (const event of events) {
    if (event.type === "model.completed" && event.ignored === undefined) {
      outputs.push(event.payload);
    }
  }
  return outputs;
}

/**
 * The `loadRecording` of `--model replay:RUN`: RUN (an id, a unique prefix or `last`) resolved in
 * `home`, its recorded model outputs in order. A run that recorded none cannot be replayed.
 */
export function recordingLoader(root: DataRoot): (run: string) => Promise<RecordedOutput[]> {
  return (run) => {
    try {
      const record = resolveRun(root, run);
      const outputs = recordedOutputs(readEvents(root, record.id).events);
      if (outputs.length === 0) throw nothingToReplay(record);
      return Promise.resolve(outputs);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

function nothingToReplay(record: RunRecord): UsageError {
  return new UsageError(`Cannot replay run ${record.id}: it recorded no model outputs`, {
    hint: record.driver === "loop"
      ? "its model never answered; nothing can be served again"
      : `it ran the ${record.driver} driver; only runs of the built-in loop (--driver loop) replay`,
  });
}

/** What a replay of `record` needs: the prompt, the approval policy and recorded decisions. */
export interface ReplayPlan {
  prompt: string;
  outputs: RecordedOutput[];
  /**
   * The policy the recording's tool outcomes imply: `ask` when it asked for approvals, `deny` when
   * its tools were refused by policy, else `auto`.
   */
  approval: "auto" | "ask" | "deny";
  /** Each recorded approval's decision, by approvalId. */
  decisions: Map<string, { decision: "allow" | "deny"; by: string; reason: string | null }>;
  /** Each recorded answer to a question the run asked (ask_user), by questionId. */
  answers: Map<string, string>;
  /** The budget the recorded turn ran under: a replay is held to it too. */
  budget: { maxTurns?: number; maxTokens?: number; maxUsd?: number };
  /**
   * The model call the recording was interrupted in, when it was (asked, never answered, the run
   * interrupted): its number (1-based) and the text it had streamed by then. A replay stops there
   * as the recording did.
   */
  cutMidCall: { modelCall: number; text: string } | null;
}

/** The call a recording was interrupted in (see ReplayPlan.cutMidCall), or null. */
export function interruptedCall(events: readonly RunEvent[]): ReplayPlan["cutMidCall"] {
  const recorded = live(events);
  if (describeOutcome(terminal(recorded)) !== "interrupted") return null;
  const asked = recorded.findLastIndex((event) => event.type === "model.requested");
  if (asked < 0 || asked < recorded.findLastIndex((e) => e.type === "model.completed")) return null;
  let text = "";
  for (const event of recorded.slice(asked)) {
    if (event.type === "message.delta" && event.payload.role === "assistant") {
      text += event.payload.text;
    }
  }
  return { modelCall: recordedOutputs(recorded).length + 1, text };
}

export function replayPlan(record: RunRecord, events: readonly RunEvent[]): ReplayPlan {
  const outputs = recordedOutputs(events);
  if ((HARNESS_DRIVERS as readonly string[]).includes(record.driver)) {
    // A harness run replays from the model calls its gateway recorded.
    if (!events.some((e) => e.type === "model.call.started" && e.ignored === undefined)) {
      throw new UsageError(
        `Cannot replay run ${record.id}: its ${record.driver} run recorded no model calls`,
        {
          hint: "a harness run replays from what reins's model gateway recorded; this one ran " +
            "without the gateway (--no-gateway, or the config's gateway.enabled false)",
        },
      );
    }
  } else if (record.driver !== "loop") {
    throw new UsageError(
      `Cannot replay run ${record.id}: it ran the ${record.driver} driver, not the built-in loop ` +
        "nor a harness",
      {
        hint: "the built-in loop and the harnesses (claude, codex, gemini, opencode) record the " +
          "model calls a replay serves; a command's model is its own business",
      },
    );
  } else if (outputs.length === 0) throw nothingToReplay(record);
  let prompt = record.goal;
  const decisions: ReplayPlan["decisions"] = new Map();
  const answers: ReplayPlan["answers"] = new Map();
  let asked = false;
  let deniedByPolicy = false;
  let budget: ReplayPlan["budget"] = {};
  for (const event of events) {
    if (event.ignored !== undefined) continue;
    if (event.type === "run.started" && event.payload.budget) {
      const { maxTurns, maxTokens, maxUsd } = event.payload.budget;
      budget = Object.fromEntries(
        Object.entries({ maxTurns, maxTokens, maxUsd }).filter(([, limit]) => limit !== undefined),
      );
    }
    if (prompt === null && event.type === "message.completed" && event.payload.role === "user") {
      prompt = event.payload.text;
    }
    if (event.type === "approval.requested") asked = true;
    if (event.type === "approval.resolved") {
      decisions.set(event.payload.approvalId, {
        decision: event.payload.decision,
        by: event.payload.by,
        reason: event.payload.reason ?? null,
      });
    }
    if (event.type === "question.answered" && !answers.has(event.payload.questionId)) {
      answers.set(event.payload.questionId, event.payload.answer);
    }
    if (event.type === "tool.completed" && event.payload.error === "denied by policy") {
      deniedByPolicy = true;
    }
  }
  if (prompt === null) {
    throw new UsageError(`Cannot replay run ${record.id}: it recorded no prompt`);
  }
  return {
    prompt,
    outputs,
    approval: asked ? "ask" : deniedByPolicy ? "deny" : "auto",
    decisions,
    answers,
    budget,
    cutMidCall: interruptedCall(events),
  };
}

export interface ReplayDirectory {
  /** Where the replay runs: a fresh directory, kept afterwards to look at. */
  cwd: string;
  /** "snapshot": the tree the run started from; "copy": the directory as it is now. */
  source: "snapshot" | "copy";
  /** One line for people: where it is and what it holds, or why it is only a copy. */
  note: string;
}

/**
 * A fresh directory under the data root's tmp/ for one replay: `tmp/replay-ID/NAME`, NAME the
 * recorded directory's own name, which harnesses show and name things after (Gemini CLI's
 * project directory, a prompt's "working in …/NAME").
 */
function freshReplayDir(root: DataRoot, recordedCwd: string): string {
  const tmp = root.layout.tmp();
  const parent = joinPath(tmp, `replay-${newId()}`);
  root.ensureDir(tmp);
  Deno.mkdirSync(parent, { mode: 0o700 });
  const name = recordedCwd.replace(/\/+$/, "").split("/").at(-1) ?? "";
  if (name === "" || name === "." || name === "..") return Deno.realPathSync(parent);
  const dir = joinPath(parent, name);
  Deno.mkdirSync(dir, { mode: 0o700 });
  return Deno.realPathSync(dir);
}

/**
 * The directory to replay `run` in: its snapshot restored into a fresh directory under the data
 * root, so the replay starts from the state the recorded run started from. With no usable
 * snapshot (none was taken, it was skipped, it is damaged), a copy of the recorded directory as
 * it is now, and a note that says so.
 */
export async function replayDirectory(root: DataRoot, run: RunRecord): Promise<ReplayDirectory> {
  const read = readManifest(root, run.id);
  let why: string;
  if (read === null) why = "no snapshot was taken";
  else if (!read.ok) why = `its snapshot cannot be read (${read.reason})`;
  else if (read.manifest.state === "skipped") {
    why = `its snapshot was skipped: ${read.manifest.reason}`;
  } else {
    const cwd = freshReplayDir(root, run.cwd);
    try {
      const restored = await restoreSnapshot(root, read.manifest, cwd);
      const unnamed = read.manifest.nonUtf8Names ?? 0;
      return {
        cwd,
        source: "snapshot",
        note: `in ${cwd}: ${run.cwd} as the run found it (${
          describeSize(restored.files, restored.bytes)
        }${unnamed > 0 ? `; ${namesLeftOut(unnamed)} when it was taken` : ""})`,
      };
    } catch (error) {
      await Deno.remove(cwd, { recursive: true }).catch(() => {});
      // Its tmp/replay-ID parent too, now empty.
      const parent = cwd.slice(0, cwd.lastIndexOf("/"));
      if (/\/replay-[^/]+$/.test(parent)) await Deno.remove(parent).catch(() => {});
      if (!(error instanceof SnapshotDamagedError)) throw error;
      why = error.message.replace(/^The snapshot of run \S+ is/, "its snapshot is");
    }
  }
  const copied: CopyCounts = { nonUtf8Names: 0 };
  const cwd = await copyWorkingDirectory(run.cwd, freshReplayDir(root, run.cwd), copied);
  const unnamed = copied.nonUtf8Names > 0 ? ` (${namesLeftOut(copied.nonUtf8Names)})` : "";
  return {
    cwd,
    source: "copy",
    note: `in ${cwd}, a copy of ${run.cwd} as it is now${unnamed}: ${why}, so the replay may ` +
      "diverge where the directory has changed since",
  };
}

function namesLeftOut(count: number): string {
  return `${count} ${
    count === 1 ? "file whose name is" : "files whose names are"
  } not UTF-8 left out: reins cannot name ${count === 1 ? "it" : "them"}`;
}

/** What a copy left out: names that are not UTF-8 (Deno gives them with U+FFFD: nameExists). */
export interface CopyCounts {
  nonUtf8Names: number;
}

/**
 * Copies the directory `from` into `to` (a new temp directory when not given): files with their
 * permission bits, directories, symbolic links as links. Returns the copy's real path. Other
 * kinds of file are left out, and so are names that are not UTF-8 (counted in `counts`).
 */
export async function copyWorkingDirectory(
  from: string,
  into?: string,
  counts: CopyCounts = { nonUtf8Names: 0 },
): Promise<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(from);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new UsageError(`Cannot copy the recorded working directory ${from}: it is gone`, {
        hint: "give the directory to replay in with --cwd DIR",
      });
    }
    throw error;
  }
  if (!info.isDirectory) {
    throw new UsageError(`Cannot copy the recorded working directory ${from}: not a directory`, {
      hint: "give the directory to replay in with --cwd DIR",
    });
  }
  const to = into ?? await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-replay-" }));
  try {
    await copyTree(from, to, counts);
  } catch (error) {
    if (into !== undefined) await Deno.remove(into, { recursive: true }).catch(() => {});
    throw error;
  }
  return to;
}

async function copyTree(from: string, to: string, counts: CopyCounts): Promise<void> {
  for await (const entry of Deno.readDir(from)) {
    const source = joinPath(from, entry.name);
    const target = joinPath(to, entry.name);
    if (entry.name.includes("\uFFFD") && !nameExists(source)) {
      counts.nonUtf8Names++;
      continue;
    }
    if (entry.isSymlink) {
      await createLink(await Deno.readLink(source), target, { copyOf: source });
    } else if (entry.isDirectory) {
      const { mode } = await Deno.stat(source);
      await Deno.mkdir(target, { mode: mode === null ? 0o755 : mode & 0o777 });
      await copyTree(source, target, counts);
    } else if (entry.isFile) {
      await Deno.copyFile(source, target);
      const { mode } = await Deno.stat(target);
      if (mode !== null && (mode & ~PERMISSION_BITS & 0o7777) !== 0) {
        await Deno.chmod(target, mode & PERMISSION_BITS);
      }
    }
  }
}

/** Where and how a replay first parted from its recording. */
export type Divergence =
  | {
    kind: "tool-result";
    /** The replay's tool.completed, and the recording's it was compared with. */
    sequence: number;
    recordedSequence: number;
    callId: string;
    tool: string;
    recorded: ToolOutcome;
    replayed: ToolOutcome;
  }
  | {
    kind: "extra-tool-call";
    sequence: number;
    callId: string;
    tool: string;
  }
  | {
    /** The replay asked the model once more than the recording has answers for. */
    kind: "script-ran-out";
    sequence: number;
    modelCall: number;
    recordedOutputs: number;
  }
  | {
    /** The replay settled before it used every recorded answer. */
    kind: "unused-outputs";
    sequence: number;
    served: number;
    recordedOutputs: number;
  }
  | {
    kind: "outcome";
    sequence: number;
    recorded: string;
    replayed: string;
  };

export interface ToolOutcome {
  ok: boolean;
  result?: unknown;
  error?: string;
}

export interface ReplayVerdict {
  diverged: boolean;
  /** Every difference found, in the replay's order; the first is where it diverged. */
  divergences: Divergence[];
  modelOutputs: { recorded: number; served: number };
  toolResults: { recorded: number; replayed: number; differing: number };
}

type ToolCompleted = Extract<RunEvent, { type: "tool.completed" }>;

function live(events: readonly RunEvent[]): RunEvent[] {
  return events.filter((event) => event.ignored === undefined);
}

function outcomeOf(payload: ToolCompleted["payload"]): ToolOutcome {
  const outcome: ToolOutcome = { ok: payload.ok };
  if (payload.result !== undefined) outcome.result = payload.result;
  if (payload.error !== undefined) outcome.error = payload.error;
  return outcome;
}

/** JSON with object keys sorted, so that equal values compare equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner) => {
    if (inner === null || typeof inner !== "object" || Array.isArray(inner)) return inner;
    return Object.fromEntries(
      Object.keys(inner).sort().map((key) => [key, (inner as Record<string, unknown>)[key]]),
    );
  });
}

function toolName(events: readonly RunEvent[], completed: ToolCompleted): string {
  const named = (completed.payload as Record<string, unknown>).tool;
  if (typeof named === "string") return named;
  const started = events.find((event) =>
    event.type === "tool.started" && event.payload.callId === completed.payload.callId
  );
  return started?.type === "tool.started" ? started.payload.tool : "?";
}

function terminal(events: readonly RunEvent[]): RunEvent | undefined {
  return events.findLast((event) =>
    event.type === "completed" || event.type === "failed" ||
    (event.type === "status.changed" &&
      ["completed", "failed", "interrupted"].includes(event.payload.status))
  );
}

function describeOutcome(event: RunEvent | undefined): string {
  if (event === undefined) return "not settled";
  if (event.type === "status.changed") return event.payload.status;
  return event.type;
}

/**
 * Compares a replay with its recording: each tool result in order (ok, result, error — not the
 * times), whether the replay asked the model more often than the recording answered (the script
 * ran out) or settled before using every answer, and how each run ended.
 */
export function compareReplay(
  recordedEvents: readonly RunEvent[],
  replayedEvents: readonly RunEvent[],
): ReplayVerdict {
  const recorded = live(recordedEvents);
  const replayed = live(replayedEvents);
  const recordedTools = recorded.filter((e): e is ToolCompleted => e.type === "tool.completed");
  const replayedTools = replayed.filter((e): e is ToolCompleted => e.type === "tool.completed");
  const divergences: Divergence[] = [];
  let differing = 0;
  replayedTools.forEach((mine, i) => {
    const theirs = recordedTools[i];
    if (theirs === undefined) {
      differing++;
      divergences.push({
        kind: "extra-tool-call",
        sequence: mine.sequence,
        callId: mine.payload.callId,
        tool: toolName(replayed, mine),
      });
      return;
    }
    const a = outcomeOf(theirs.payload);
    const b = outcomeOf(mine.payload);
    if (theirs.payload.callId === mine.payload.callId && canonicalJson(a) === canonicalJson(b)) {
      return;
    }
    differing++;
    divergences.push({
      kind: "tool-result",
      sequence: mine.sequence,
      recordedSequence: theirs.sequence,
      callId: mine.payload.callId,
      tool: toolName(replayed, mine),
      recorded: a,
      replayed: b,
    });
  });

  const recordEnd = terminal(recorded);
  const outputs = recordedOutputs(recorded).length;
  const served = recordedOutputs(replayed).length;
  const requests = replayed.filter((event) => event.type === "model.requested");
  const replayEnd = terminal(replayed);
  // The recording's own model failed on the call after its last answer (the run failed with a
  // request unanswered): running out there is what the recording did, not a divergence.
  const unanswered = recorded.findLastIndex((e) => e.type === "model.requested") >
    recorded.findLastIndex((e) => e.type === "model.completed");
  // …or was interrupted during that call, where the replay stops too (interruptedCall).
  const recordingRanOut = unanswered &&
    (recordEnd?.type === "failed" || describeOutcome(recordEnd) === "interrupted");
  if (requests.length > served && served >= outputs) {
    if (!recordingRanOut) {
      divergences.push({
        kind: "script-ran-out",
        sequence: requests[served].sequence,
        modelCall: served + 1,
        recordedOutputs: outputs,
      });
    }
  } else if (served < outputs && replayEnd !== undefined) {
    divergences.push({
      kind: "unused-outputs",
      sequence: replayEnd.sequence,
      served,
      recordedOutputs: outputs,
    });
  }
  const recordedOutcome = describeOutcome(recordEnd);
  const replayedOutcome = describeOutcome(replayEnd);
  if (recordedOutcome !== replayedOutcome && replayEnd !== undefined) {
    divergences.push({
      kind: "outcome",
      sequence: replayEnd.sequence,
      recorded: recordedOutcome,
      replayed: replayedOutcome,
    });
  }
  divergences.sort((x, y) => x.sequence - y.sequence);
  return {
    diverged: divergences.length > 0,
    divergences,
    modelOutputs: { recorded: outputs, served },
    toolResults: { recorded: recordedTools.length, replayed: replayedTools.length, differing },
  };
}

/** How a run's events say it ended: completed, failed, interrupted, or not settled. */
export function terminalOutcome(events: readonly RunEvent[]): string {
  return describeOutcome(terminal(live(events)));
}
