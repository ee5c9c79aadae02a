// A task whose turn runs in this server: its view kept current from the events the turn stores,
// and the streams watching it. Each event is folded in once, in sequence order, and what it
// causes goes to every subscriber in that same order (A2A 1.0 §3.5.2); an event that arrives
// after a gap (an answer appended by `reins approve` in another shell) brings the missing ones in
// from the log first. A subscriber's queue holds text as ranges of the view's own text (which
// the task keeps anyway), joined while it waits: an agent that streams faster than a client
// reads costs that client nothing per delta. One that falls behind by too many other items, or
// stops reading (and so stops taking writes, which time out), is dropped, so one slow client
// never holds the others back.
import type { RunEvent } from "../store/contracts.ts";
import type { StreamResponse, Task } from "./a2a/wire.ts";
import { INTERRUPTED_STATES, TERMINAL_STATES } from "./a2a/wire.ts";
import type { TaskView } from "./task_view.ts";

/** Items other than text a subscriber may fall behind by before it is dropped. */
export const MAX_QUEUED_ITEMS = 10_000;
/** The most text one stream item carries, well under what SSE readers take as one event (4 MiB). */
export const MAX_CHUNK_TEXT = 64 * 1024;

/** Whether a stream item ends a stream that closes at `interrupted` states as well as terminal. */
export function endsStream(item: StreamResponse, atInterrupted: boolean): boolean {
  if (!("statusUpdate" in item)) return false;
  const state = item.statusUpdate.status.state;
  return TERMINAL_STATES.has(state) || (atInterrupted && INTERRUPTED_STATES.has(state));
}

type ArtifactChunk = Extract<StreamResponse, { artifactUpdate: unknown }>["artifactUpdate"];

/** Queued text: a range of the view's text, sent as one or more artifact chunks. */
interface TextRange {
  template: ArtifactChunk;
  from: number;
  to: number;
  append: boolean;
  lastChunk: boolean;
}

type Queued = { item: StreamResponse } | { text: TextRange };

function isTextChunk(chunk: ArtifactChunk): boolean {
  const parts = chunk.artifact.parts;
  return parts.length === 1 && typeof parts[0].text === "string";
}

export class Subscription {
  /** The Task as it stood when the subscription began: the stream's first item. */
  readonly first: Task;
  readonly #queue: Queued[] = [];
  /** Where the next text chunk starts in the view's text. */
  #textAt: number;
  readonly #text: () => string;
  #items = 0;
  #wake: (() => void) | null = null;
  #closed = false;
  /** Set when the subscriber fell too far behind and was dropped. */
  overflowed = false;
  readonly #onClose: (subscription: Subscription) => void;

  /** `textAt`: how much of `text()` the first item holds already (streamed chunks follow it). */
  constructor(
    first: Task,
    text: { at: number; source: () => string },
    onClose: (subscription: Subscription) => void,
  ) {
    this.first = first;
    this.#textAt = text.at;
    this.#text = text.source;
    this.#onClose = onClose;
  }

  push(item: StreamResponse): void {
    if (this.#closed) return;
    if ("artifactUpdate" in item && isTextChunk(item.artifactUpdate)) {
      const chunk = item.artifactUpdate;
      const from = this.#textAt;
      this.#textAt += chunk.artifact.parts[0].text!.length;
      const last = this.#queue.at(-1);
      if (
        last && "text" in last && !last.text.lastChunk && chunk.append === true &&
        last.text.template.artifact.artifactId === chunk.artifact.artifactId
      ) {
        last.text.to = this.#textAt;
        last.text.lastChunk = chunk.lastChunk === true;
      } else {
        this.#queue.push({
          text: {
            template: chunk,
            from,
            to: this.#textAt,
            append: chunk.append === true,
            lastChunk: chunk.lastChunk === true,
          },
        });
      }
    } else {
      if (this.#items >= MAX_QUEUED_ITEMS) {
        this.overflowed = true;
        this.#queue.length = 0;
        this.close();
        return;
      }
      this.#items++;
      this.#queue.push({ item });
    }
    this.#wake?.();
  }

  /** No more items: next() drains what is queued, then answers null. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#onClose(this);
    this.#wake?.();
  }

  /** The next item, or null once closed and drained (or when `signal` aborts). */
  async next(signal?: AbortSignal): Promise<StreamResponse | null> {
    while (true) {
      const head = this.#queue[0];
      if (head !== undefined) {
        if ("item" in head) {
          this.#queue.shift();
          this.#items--;
          return head.item;
        }
        return this.#takeText(head.text);
      }
      if (this.#closed || signal?.aborted) return null;
      await new Promise<void>((resolve) => {
        const done = () => {
          this.#wake = null;
          signal?.removeEventListener("abort", done);
          resolve();
        };
        this.#wake = done;
        signal?.addEventListener("abort", done, { once: true });
      });
    }
  }

  /** At most MAX_CHUNK_TEXT of the range at the head of the queue, as one chunk. */
  #takeText(range: TextRange): StreamResponse {
    const end = Math.min(range.to, range.from + MAX_CHUNK_TEXT);
    const whole = end === range.to;
    const { template } = range;
    const chunk: ArtifactChunk = {
      ...template,
      artifact: {
        ...template.artifact,
        parts: [{ ...template.artifact.parts[0], text: this.#text().slice(range.from, end) }],
      },
      append: range.append,
      lastChunk: whole && range.lastChunk,
    };
    if (whole) this.#queue.shift();
    else {
      range.from = end;
      range.append = true;
    }
    return { artifactUpdate: chunk };
  }
}

/** The two signals of a turn, owned by the server: stop it gracefully; kill it now. */
export interface TurnControl {
  readonly stop: AbortController;
  readonly kill: AbortController;
}

export class LiveTask {
  readonly view: TaskView;
  readonly control: TurnControl;
  readonly #subscriptions = new Set<Subscription>();
  readonly #readRange: (afterSequence: number, beforeSequence: number) => RunEvent[];
  #lastSequence = -1;
  #ended = false;
  /** Resolves when the turn has settled and its runner returned. */
  readonly finished: Promise<void>;
  #finish!: () => void;

  /**
   * `readRange` reads the run's stored events with sequences strictly between the two given, to
   * fill a gap in what reached publish().
   */
  constructor(
    view: TaskView,
    control: TurnControl,
    readRange: (afterSequence: number, beforeSequence: number) => RunEvent[],
  ) {
    this.view = view;
    this.control = control;
    this.#readRange = readRange;
    this.finished = new Promise((resolve) => this.#finish = resolve);
  }

  get taskId(): string {
    return this.view.taskId;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Folds a stored event in (once: a sequence already seen is skipped) and fans out. */
  publish(event: RunEvent): void {
    if (event.sequence <= this.#lastSequence) return;
    if (event.sequence > this.#lastSequence + 1 && this.#lastSequence >= 0) {
      let missing: RunEvent[] = [];
      try {
        missing = this.#readRange(this.#lastSequence, event.sequence);
      } catch { /* the log cannot be read now: go on with what arrived */ }
      for (const earlier of missing) this.#fold(earlier);
    }
    this.#fold(event);
  }

  #fold(event: RunEvent): void {
    if (event.sequence <= this.#lastSequence) return;
    this.#lastSequence = event.sequence;
    const items = this.view.apply(event);
    if (items.length === 0) return;
    for (const subscription of this.#subscriptions) {
      for (const item of items) subscription.push(item);
    }
  }

  /** A subscription that starts with the Task as it is now; null once the turn has ended. */
  subscribe(snapshot: (view: TaskView) => Task): Subscription | null {
    if (this.#ended) return null;
    const subscription = new Subscription(
      snapshot(this.view),
      { at: this.view.text.length, source: () => this.view.text },
      (s) => this.#subscriptions.delete(s),
    );
    this.#subscriptions.add(subscription);
    return subscription;
  }

  get subscriberCount(): number {
    return this.#subscriptions.size;
  }

  /** The turn is over: every stream drains and closes. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const subscription of [...this.#subscriptions]) subscription.close();
    this.#finish();
  }
}
