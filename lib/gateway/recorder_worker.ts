// The recording of the answers passing through the gateway, in a Worker of its own (started by
// recorder.ts): each answer's bytes are hashed (SHA-256, its name under wire/) and read for what
// they say (SSE events or a whole JSON body: the streamed text, model, stop reason, usage), off
// the thread that passes them on to the harness. It neither forwards nor writes files: the gateway
// writes each piece itself, so that the bytes on disk are the bytes that were passed on.
import { createHash } from "node:crypto";
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
  }
  /** One piece as it was passed on (`bytes`), and as it is kept (`kept`, when redacted). */
  | { kind: "piece"; id: number; bytes: Uint8Array; kept?: Uint8Array }
  | { kind: "end"; id: number };

/** What the recorder answers. */
export type FromRecorder =
  /** Every piece up to `bytes` (of the passed-on bytes) is read; `text` is what they streamed. */
  | { kind: "read"; id: number; bytes: number; text: string }
  | { kind: "done"; id: number; sha256: string; bytes: number; facts: ResponseFacts };

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
}

const answers = new Map<number, Answer>();
const decoder = new TextDecoder();
const scope = self as unknown as {
  onmessage: ((event: MessageEvent<ToRecorder>) => void) | null;
  postMessage(message: FromRecorder): void;
};

function begin(message: Extract<ToRecorder, { kind: "begin" }>): void {
  const answer: Answer = {
    hash: createHash("sha256"),
    reader: new ResponseReader(message.wire, (piece) => answer.text += piece),
    sse: null,
    json: message.format === "json" ? [] : null,
    jsonBytes: 0,
    jsonLimit: message.jsonLimit,
    read: 0,
    kept: 0,
    text: "",
  };
  if (message.format === "sse") {
    answer.sse = new SseReader((name, data) => answer.reader.eventText(name, data));
  }
  answers.set(message.id, answer);
}

function piece(answer: Answer, bytes: Uint8Array, kept: Uint8Array): void {
  answer.hash.update(kept);
  answer.kept += kept.length;
  answer.read += bytes.length;
  if (answer.sse !== null) answer.sse.push(bytes);
  else if (answer.json !== null && answer.jsonBytes + bytes.length <= answer.jsonLimit) {
    answer.json.push(bytes);
    answer.jsonBytes += bytes.length;
  }
}

function end(id: number, answer: Answer): void {
  answers.delete(id);
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
  const text = answer.text;
  answer.text = "";
  if (text !== "") scope.postMessage({ kind: "read", id, bytes: answer.read, text });
  scope.postMessage({
    kind: "done",
    id,
    sha256: answer.hash.digest("hex"),
    bytes: answer.kept,
    facts: answer.reader.facts,
  });
}

scope.onmessage = ({ data: message }) => {
  if (message.kind === "begin") return begin(message);
  const answer = answers.get(message.id);
  if (answer === undefined) return;
  if (message.kind === "end") return end(message.id, answer);
  piece(answer, message.bytes, message.kept ?? message.bytes);
  const text = answer.text;
  answer.text = "";
  scope.postMessage({ kind: "read", id: message.id, bytes: answer.read, text });
};
