// A streaming model call's text as `message.delta` events, coalesced: what arrives within
// INTERVAL_MS (or up to MAX_UNITS) becomes one event, so that a fast stream of tokens is a few
// appends a second, not one a token, while `reins show --follow` (which looks every 100 ms) still
// shows the text as it comes. Whatever is pending when the call ends — answered, failed or
// interrupted — is emitted then: the deltas of a call always add up to the text it streamed.

/** At most one event per this many milliseconds (what reins show --follow's polling shows). */
export const INTERVAL_MS = 100;
/** An event as soon as this much text (UTF-16 units) is waiting, whatever the time. */
export const MAX_UNITS = 4096;

export class TextDeltas {
  readonly #emit: (text: string) => void;
  readonly #intervalMs: number;
  readonly #maxUnits: number;
  #pending = "";
  #lastMs = -Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;

  /** `emit` records one delta (the loop's sink, as `message.delta` of the assistant). */
  constructor(
    emit: (text: string) => void,
    options: { intervalMs?: number; maxUnits?: number } = {},
  ) {
    this.#emit = emit;
    this.#intervalMs = options.intervalMs ?? INTERVAL_MS;
    this.#maxUnits = options.maxUnits ?? MAX_UNITS;
  }

  /** A piece of the text, as the model streams it. */
  add(text: string): void {
    if (this.#done || text === "") return;
    this.#pending += text;
    const waitMs = this.#lastMs + this.#intervalMs - performance.now();
    if (this.#pending.length >= this.#maxUnits || waitMs <= 0) {
      this.#flush();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#flush(), waitMs);
    }
  }

  /** The call ended (however): what is pending is emitted, and nothing after. */
  finish(): void {
    if (this.#done) return;
    this.#flush();
    this.#done = true;
  }

  #flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#pending === "") return;
    const text = this.#pending;
    this.#pending = "";
    this.#lastMs = performance.now();
    this.#emit(text);
  }
}
