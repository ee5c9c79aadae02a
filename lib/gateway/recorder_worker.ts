// The recording of the answers passing through the gateway, in a Worker of its own (started by
// recorder.ts): each answer's bytes, as the gateway passed them on, are written to its partial
// file, hashed (SHA-256, its name under wire/) and read for what they say (SSE events or a whole
// JSON body: the streamed text, model, stop reason, usage), off the thread that passes them on to
// the harness. It forwards nothing and names no file: the gateway renames the file once it is
// whole (bodies.ts).
import { createHash } from "node:crypto";
import { openNewPrivateFile } from "../core/atomic_write.ts";
import { Redactor } from "../core/redact.ts";
import { redactedBytes } from "./redacted_bytes.ts";
import { SseReader } from "./sse.ts";
import { type ResponseFacts, ResponseReader, type Wire } from "./wires.ts";

/** What the gateway tells the recorder. */
export type ToRecorder =
  | {
    kind: "begin";
    id: number;
    wire: Wire;
    /** How the answer is read: SSE events, a whole JSON body (up to `jsonLimit`), or not at all. */
    format: "sse" | "json" | "none";
    jsonLimit: number;
    /**
     * The answer's partial file (absolute, in a private directory): made new on its first piece,
     * or appended to when the gateway wrote its beginning (`appends`).
     */
    file: string;
    appends: boolean;
    /** How much of its text the gateway already told (its first pieces were read there). */
    skipText: number;
  }
  /**
   * One piece as it was passed on; kept with the gateway's known secrets replaced (`secrets`: the
   * values, whenever there are new ones).
   */
  | { kind: "piece"; id: number; bytes: Uint8Array; secrets?: string[]; written?: boolean }
  | { kind: "end"; id: number };

/** What the recorder answers. */
export type FromRecorder =
  /** Every piece up to `bytes` (of the passed-on bytes) is read; `text` is what they streamed. */
  /** `buffers`: those of the pieces read, given back for the next pieces (no garbage each way). */
  | { kind: "read"; id: number; bytes: number; text: string; buffers: ArrayBuffer[] }
  /** The answer is read, and on disk (synced) unless `error` says why not; `bytes` as kept. */
  | {
    kind: "done";
    id: number;
    sha256: string;
    bytes: number;
    facts: ResponseFacts;
    error: string | null;
  };

interface Answer {
  hash: ReturnType<typeof createHash>;
  reader: ResponseReader;
  sse: SseReader | null;
  json: Uint8Array[] | null;
  jsonBytes: number;
  jsonLimit: number;
  read: number;
  kept: number;
  text: string;
  path: string;
  appends: boolean;
  file: Deno.FsFile | null;
  error: string | null;
  skipText: number;
  /** How much of it the gateway was last told was read; a timer to tell it the rest. */
  told: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Progress is told after this much more is read, or this long after a piece left untold. */
const TELL_EVERY_BYTES = 512 * 1024;
const TELL_WITHIN_MS = 20;

const answers = new Map<number, Answer>();
const secrets = new Redactor();
/** The buffers of the pieces read since the gateway was last told: it reuses them. */
const spare: ArrayBuffer[] = [];
const decoder = new TextDecoder();
const scope = self as unknown as {
  onmessage: ((event: MessageEvent<ToRecorder>) => void) | null;
  postMessage(message: FromRecorder, transfer?: Transferable[]): void;
};

function begin(message: Extract<ToRecorder, { kind: "begin" }>): void {
  const answer: Answer = {
    hash: createHash("sha256"),
    reader: new ResponseReader(message.wire, (piece) => {
      // The text the gateway read itself is not told again.
      if (answer.skipText >= piece.length) return void (answer.skipText -= piece.length);
      answer.text += answer.skipText > 0 ? piece.slice(answer.skipText) : piece;
      answer.skipText = 0;
    }),
    sse: null,
    json: message.format === "json" ? [] : null,
    jsonBytes: 0,
    jsonLimit: message.jsonLimit,
    read: 0,
    kept: 0,
    text: "",
    path: message.file,
    appends: message.appends,
    file: null,
    error: null,
    skipText: message.skipText,
    told: 0,
    timer: undefined,
  };
  if (message.format === "sse") {
    answer.sse = new SseReader(
      (name, data) => answer.reader.eventText(name, data),
      (text, from, limit) => answer.reader.textRun(text, from, limit),
    );
  }
  answers.set(message.id, answer);
}

function why(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Writes `bytes` whole to the answer's file (a failure is kept, and ends the writing). */
function write(answer: Answer, bytes: Uint8Array): void {
  if (answer.error !== null || bytes.length === 0) return;
  try {
    answer.file ??= answer.appends
      ? Deno.openSync(answer.path, { append: true })
      : openNewPrivateFile(answer.path, { write: true });
    let written = 0;
    while (written < bytes.length) written += answer.file.writeSync(bytes.subarray(written));
  } catch (error) {
    answer.error = `${answer.path} could not be written: ${why(error)}`;
  }
}

/** Syncs and closes the answer's file. */
function close(answer: Answer): void {
  const file = answer.file;
  answer.file = null;
  if (file === null) return;
  try {
    if (answer.error === null) file.syncSync();
  } catch (error) {
    answer.error = `${answer.path} could not be synced: ${why(error)}`;
  } finally {
    file.close();
  }
}

/** One piece: written (unless the gateway wrote it), hashed as kept and read as passed on. */
function piece(answer: Answer, bytes: Uint8Array, kept: Uint8Array, written: boolean): void {
  if (!written) write(answer, kept);
  answer.hash.update(kept);
  answer.kept += kept.length;
  answer.read += bytes.length;
  if (answer.sse !== null) answer.sse.push(bytes);
  else if (answer.json !== null && answer.jsonBytes + bytes.length <= answer.jsonLimit) {
    // Kept to the end: a copy, its buffer going back with the others.
    answer.json.push(bytes.slice());
    answer.jsonBytes += bytes.length;
  }
}

/** Tells the gateway how far the answer is read, and the text read since it was last told. */
function tell(id: number, answer: Answer): void {
  clearTimeout(answer.timer);
  answer.timer = undefined;
  if (answer.told === answer.read && answer.text === "" && spare.length === 0) return;
  const text = answer.text;
  answer.text = "";
  answer.told = answer.read;
  const buffers = spare.splice(0);
  scope.postMessage({ kind: "read", id, bytes: answer.read, text, buffers }, buffers);
}

function end(id: number, answer: Answer): void {
  answers.delete(id);
  close(answer);
  answer.sse?.end();
  if (answer.json !== null && answer.json.length > 0) {
    const all = new Uint8Array(answer.jsonBytes);
    let at = 0;
    for (const part of answer.json) {
      all.set(part, at);
      at += part.length;
    }
    let data: unknown = null;
    try {
      data = JSON.parse(decoder.decode(all));
    } catch { /* not JSON: nothing to read in it */ }
    answer.reader.json(data);
  }
  tell(id, answer);
  scope.postMessage({
    kind: "done",
    id,
    sha256: answer.hash.digest("hex"),
    bytes: answer.kept,
    facts: answer.reader.facts,
    error: answer.error,
  });
}

scope.onmessage = ({ data: message }) => {
  if (message.kind === "begin") return begin(message);
  const answer = answers.get(message.id);
  if (answer === undefined) return;
  if (message.kind === "end") return end(message.id, answer);
  if (message.secrets !== undefined) secrets.add(...message.secrets);
  piece(answer, message.bytes, redactedBytes(message.bytes, secrets), message.written === true);
  spare.push(message.bytes.buffer as ArrayBuffer);
  // Told in batches (a message each way per piece cost ~5 ms of a 10 MB stream), and soon: the
  // text is shown live, and the gateway's stream waits when the reading is far behind.
  if (answer.read - answer.told >= TELL_EVERY_BYTES) tell(message.id, answer);
  else answer.timer ??= setTimeout(() => tell(message.id, answer), TELL_WITHIN_MS);
};
