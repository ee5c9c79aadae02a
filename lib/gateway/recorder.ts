// The gateway's side of its recorder (recorder_worker.ts, one Worker per process while any turn
// is bound): an answer's pieces are handed to it as they are passed on, and it writes them to the
// answer's file and reads them; what it reads comes back — the streamed text as it goes, the
// answer's SHA-256 and facts at its end. Passing an answer
// on never waits for it unless it falls `WINDOW_BYTES` behind, which bounds the memory an answer
// takes however long it is. A recorder that fails ends every answer it held with nothing read.
import { describeError } from "../core/errors.ts";
import { workerUrl } from "../core/lazy_import.ts";
import { knownSecrets } from "../core/redact.ts";
import type { FromRecorder, ToRecorder } from "./recorder_worker.ts";
import type { ResponseFacts, Wire } from "./wires.ts";

/** How far the reading of an answer may fall behind passing it on before the stream waits. */
export const WINDOW_BYTES = 2 * 1024 * 1024;

/**
 * The pieces go over in buffers of this size, which come back once read and are used again: a
 * long stream of pieces no longer than this makes no garbage on either thread.
 */
const BUFFER_BYTES = 64 * 1024;
/** Spare buffers kept at most (the rest left to the collector). */
const SPARE_BUFFERS = 2 * WINDOW_BYTES / BUFFER_BYTES;

/**
 * What the recorder made of a whole answer: its hash and size as kept, what it said, and why it is
 * not on disk whole if it is not (null sha256: the recorder failed, nothing was read).
 */
export interface RecordedAnswer {
  sha256: string | null;
  bytes: number;
  facts: ResponseFacts;
  error?: string;
}

const NO_FACTS = (): ResponseFacts => ({
  id: null,
  model: null,
  stopReason: null,
  usage: null,
  error: null,
});

interface Pending {
  text(piece: string): void;
  /** Bytes handed over and not yet read. */
  behind: number;
  sent: number;
  caughtUp: (() => void) | null;
  done(answer: RecordedAnswer): void;
}

export class Recorder {
  readonly #worker: Worker;
  readonly #answers = new Map<number, Pending>();
  #next = 0;
  #failure: string | null = null;
  #idle: (() => void) | null = null;
  /** How many of the known secrets the worker was given. */
  #secretsSent = 0;
  readonly #spare: ArrayBuffer[] = [];

  constructor() {
    this.#worker = new Worker(workerUrl("gateway/recorder_worker.ts"), { type: "module" });
    this.#worker.onmessage = (event: MessageEvent<FromRecorder>) => this.#heard(event.data);
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#fail(`the gateway's recorder failed: ${event.message}`);
    };
    this.#worker.onmessageerror = () =>
      this.#fail("the gateway's recorder sent what cannot be read");
  }

  #heard(message: FromRecorder): void {
    const pending = this.#answers.get(message.id);
    if (pending === undefined) return;
    if (message.kind === "read") {
      for (const buffer of message.buffers) {
        if (buffer.byteLength === BUFFER_BYTES && this.#spare.length < SPARE_BUFFERS) {
          this.#spare.push(buffer);
        }
      }
      if (message.text !== "") pending.text(message.text);
      pending.behind = pending.sent - message.bytes;
      if (pending.behind <= WINDOW_BYTES / 2) this.#release(pending);
      return;
    }
    this.#answers.delete(message.id);
    this.#release(pending);
    pending.done({
      sha256: message.sha256,
      bytes: message.bytes,
      facts: message.facts,
      ...(message.error === null ? {} : { error: message.error }),
    });
    if (this.#answers.size === 0) this.#idle?.();
  }

  #release(pending: Pending): void {
    const caughtUp = pending.caughtUp;
    pending.caughtUp = null;
    caughtUp?.();
  }

  #fail(why: string): void {
    this.#failure ??= why;
    for (const pending of this.#answers.values()) {
      this.#release(pending);
      pending.done({ sha256: null, bytes: 0, facts: NO_FACTS(), error: why });
    }
    this.#answers.clear();
    this.#idle?.();
  }

  #post(message: ToRecorder, transfer: Transferable[] = []): void {
    try {
      this.#worker.postMessage(message, transfer);
    } catch (error) {
      this.#fail(`the gateway's recorder cannot be reached: ${describeError(error)}`);
    }
  }

  /**
   * Begins recording an answer of `wire` into `file` (a new file's absolute path, in a private
   * directory); `text` receives its streamed text as it is read. The answer's pieces go to the
   * returned recording, which resolves `finished` at its end.
   */
  begin(
    wire: Wire,
    format: "sse" | "json" | "none",
    options: {
      file: string;
      appends: boolean;
      skipText: number;
      jsonLimit: number;
      text(piece: string): void;
    },
  ): AnswerRecording {
    const id = ++this.#next;
    let done!: (answer: RecordedAnswer) => void;
    const finished = new Promise<RecordedAnswer>((resolve) => done = resolve);
    if (this.#failure !== null) {
      done({ sha256: null, bytes: 0, facts: NO_FACTS(), error: this.#failure });
      return new AnswerRecording(() => {}, () => null, () => {}, finished);
    }
    const pending: Pending = { text: options.text, behind: 0, sent: 0, caughtUp: null, done };
    this.#answers.set(id, pending);
    this.#post({
      kind: "begin",
      id,
      wire,
      format,
      jsonLimit: options.jsonLimit,
      file: options.file,
      appends: options.appends,
      skipText: options.skipText,
    });
    return new AnswerRecording(
      (bytes, written = false) => {
        if (!this.#answers.has(id)) return;
        pending.sent += bytes.length;
        pending.behind += bytes.length;
        // A copy goes over, in a spare buffer (one of its own for a piece longer than they are,
        // kept whole so that a secret in it is found whole): the piece is the harness's to read.
        const buffer = bytes.length <= BUFFER_BYTES
          ? this.#spare.pop() ?? new ArrayBuffer(BUFFER_BYTES)
          : new ArrayBuffer(bytes.length);
        const copy = new Uint8Array(buffer, 0, bytes.length);
        copy.set(bytes);
        // The secrets the worker redacts: any known since it was last told.
        const secrets = knownSecrets.size === this.#secretsSent ? undefined : knownSecrets.values();
        this.#secretsSent = knownSecrets.size;
        this.#post({
          kind: "piece",
          id,
          bytes: copy,
          ...(secrets ? { secrets } : {}),
          ...(written ? { written } : {}),
        }, [buffer]);
      },
      () => {
        if (pending.behind <= WINDOW_BYTES || !this.#answers.has(id)) return null;
        return new Promise<void>((resolve) => pending.caughtUp = resolve);
      },
      () => {
        if (this.#answers.has(id)) this.#post({ kind: "end", id });
      },
      finished,
    );
  }

  /** Resolves once no answer is being read. */
  idle(): Promise<void> {
    if (this.#answers.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle = resolve);
  }

  /** Stops the worker; answers not yet whole end with nothing read. */
  terminate(): void {
    this.#fail("the gateway's recorder was stopped");
    this.#worker.terminate();
  }
}

/** One answer being recorded. */
export class AnswerRecording {
  constructor(
    /**
     * Hands over a piece as passed on (the recorder keeps it with known secrets replaced);
     * `written`: the gateway wrote it to the file already, it is only to be hashed and read.
     */
    readonly piece: (bytes: Uint8Array, written?: boolean) => void,
    /** A promise to wait for when the reading is too far behind, else null. */
    readonly tooFarBehind: () => Promise<void> | null,
    /** The answer is whole (or cut off). */
    readonly end: () => void,
    readonly finished: Promise<RecordedAnswer>,
  ) {}
}
