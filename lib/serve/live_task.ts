// A task whose turn runs in this server: its view kept current from the events the turn stores,
// and the streams watching it. Each event is folded in once, in sequence order (an event that
// arrives after a gap — an answer appended by `reins approve` in another shell — brings the
// missing ones in from the log first), and what it causes is appended once to the task's feed:
// one list of stream items that every subscriber reads with a cursor of its own. So every
// subscriber gets the very same items in the same order (A2A 1.0 §3.5.2) however fast it reads,
// and a fast one never waits for a slow one. Text in the feed is a range of the view's own text
// (which the task keeps anyway), so a reader behind by many deltas costs a few numbers per delta;
// the feed keeps only what some subscriber has yet to read. A subscriber that falls too far
// behind, or stops reading (and so stops taking writes, which time out), is dropped.
import type { RunEvent } from "../store/mod.ts";
import type { StreamResponse, Task } from "./a2a/wire.ts";
import { INTERRUPTED_STATES, TERMINAL_STATES } from "./a2a/wire.ts";
import type { TaskView } from "./task_view.ts";

/** Items other than text a subscriber may fall behind by before it is dropped. */
export const MAX_QUEUED_ITEMS = 10_000;
/** Text chunks a subscriber may fall behind by before it is dropped (a few numbers each). */
export const MAX_QUEUED_CHUNKS = 200_000;
/** The most text one stream item carries, well under what SSE readers take as one event (4 MiB). */
export const MAX_CHUNK_TEXT = 64 * 1024;

/** Whether a stream item ends a stream that closes at `interrupted` states as well as terminal. */
export function endsStream(item: StreamResponse, atInterrupted: boolean): boolean {
  if (!("statusUpdate" in item)) return false;
  const state = item.statusUpdate.status.state;
  return TERMINAL_STATES.has(state) || (atInterrupted && INTERRUPTED_STATES.has(state));
}

type ArtifactChunk = Extract<StreamResponse, { artifactUpdate: unknown }>["artifactUpdate"];

/** Text in the feed: `text().slice(from, to)` sent as one artifact chunk shaped like `base`. */
interface TextRange {
  /** The chunk the view made, its text left out (shared by the ranges of one artifact). */
  base: ArtifactChunk;
  from: number;
  to: number;
  append: boolean;
  lastChunk: boolean;
}

type Entry = { item: StreamResponse } | { text: TextRange };

function isTextChunk(chunk: ArtifactChunk): boolean {
  const parts = chunk.artifact.parts;
  return parts.length === 1 && typeof parts[0].text === "string";
}

/** Feed entries are dropped from the front once this many are read by every subscriber. */
const TRIM_AT = 1024;

/**
 * The items of one task, in order, from the oldest a subscriber has yet to read. Positions are
 * absolute (the n-th item the task made), so a cursor survives trimming.
 */
class Feed {
  #entries: Entry[] = [];
  /** The position of #entries[0]. */
  #base = 0;
  /** Items other than text appended so far, over the task's life. */
  items = 0;
  /** The view's text length after the last text appended. */
  #textAt: number;
  readonly text: () => string;
  #lastBase: ArtifactChunk | null = null;
  readonly subscriptions = new Set<Subscription>();
  ended = false;

  constructor(text: () => string) {
    this.text = text;
    this.#textAt = text().length;
  }

  /** The position the next appended entry gets. */
  get head(): number {
    return this.#base + this.#entries.length;
  }

  entry(position: number): Entry {
    return this.#entries[position - this.#base];
  }

  append(item: StreamResponse): void {
    if ("artifactUpdate" in item && isTextChunk(item.artifactUpdate)) {
      const chunk = item.artifactUpdate;
      const length = chunk.artifact.parts[0].text!.length;
      const from = this.#textAt;
      this.#textAt += length;
      if (this.subscriptions.size === 0) return;
      let base = this.#lastBase;
      if (base === null || base.artifact.artifactId !== chunk.artifact.artifactId) {
        base = this.#lastBase = { ...chunk, artifact: { ...chunk.artifact, parts: [] } };
      }
      // A delta longer than one item carries is split here, once, so every reader gets the same.
      let at = from;
      do {
        const to = Math.min(this.#textAt, at + MAX_CHUNK_TEXT);
        this.#entries.push({
          text: {
            base,
            from: at,
            to,
            append: at === from ? chunk.append === true : true,
            lastChunk: to === this.#textAt && chunk.lastChunk === true,
          },
        });
        at = to;
      } while (at < this.#textAt);
    } else {
      this.items++;
      if (this.subscriptions.size === 0) return;
      this.#entries.push({ item });
    }
  }

  /** Drops what every subscriber has read (all of it when none is left). */
  trim(): void {
    if (this.#entries.length < TRIM_AT && this.subscriptions.size > 0) return;
    let oldest = this.head;
    for (const subscription of this.subscriptions) oldest = Math.min(oldest, subscription.at);
    const read = oldest - this.#base;
    if (read === this.#entries.length) this.#entries = [];
    else if (read >= this.#entries.length / 2) this.#entries = this.#entries.slice(read);
    else return;
    this.#base = oldest;
  }
}

export class Subscription {
  /** The Task as it stood when the subscription began: the stream's first item. */
  readonly first: Task;
  readonly #feed: Feed;
  /** The position in the feed of the next item to read. */
  at: number;
  /** Items other than text read (the feed's count when the subscription began, and on). */
  #items: number;
  #wake: (() => void) | null = null;
  #closed = false;
  /** Set when the subscriber fell too far behind and was dropped. */
  overflowed = false;

  constructor(first: Task, feed: Feed) {
    this.first = first;
    this.#feed = feed;
    this.at = feed.head;
    this.#items = feed.items;
  }

  /** Called when the feed grew: wakes the reader, or drops it if it is too far behind. */
  notify(): void {
    if (
      this.#feed.items - this.#items > MAX_QUEUED_ITEMS ||
      this.#feed.head - this.at > MAX_QUEUED_ITEMS + MAX_QUEUED_CHUNKS
    ) {
      this.overflowed = true;
      this.close();
      return;
    }
    this.#wake?.();
  }

  /** This reader is done: next() answers null from now on. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#feed.subscriptions.delete(this);
    this.#feed.trim();
    this.#wake?.();
  }

  /**
   * The next item; null once the turn has ended and every item is read, once closed, or when
   * `signal` aborts.
   */
  async next(signal?: AbortSignal): Promise<StreamResponse | null> {
    while (true) {
      if (this.#closed) return null;
      if (this.at < this.#feed.head) {
        const entry = this.#feed.entry(this.at++);
        if (this.at - this.#feed.head === 0 || this.at % 256 === 0) this.#feed.trim();
        if ("item" in entry) {
          this.#items++;
          return entry.item;
        }
        return this.#chunk(entry.text);
      }
      if (this.#feed.ended || signal?.aborted) return null;
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

  #chunk(range: TextRange): StreamResponse {
    const { base } = range;
    return {
      artifactUpdate: {
        ...base,
        artifact: {
          ...base.artifact,
          parts: [{ text: this.#feed.text().slice(range.from, range.to) }],
        },
        append: range.append,
        lastChunk: range.lastChunk,
      },
    };
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
  readonly #feed: Feed;
  readonly #readRange: (afterSequence: number, beforeSequence: number) => RunEvent[];
  #lastSequence = -1;
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
    this.#feed = new Feed(() => view.text);
    this.#readRange = readRange;
    this.finished = new Promise((resolve) => this.#finish = resolve);
  }

  get taskId(): string {
    return this.view.taskId;
  }

  get ended(): boolean {
    return this.#feed.ended;
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
    for (const item of items) this.#feed.append(item);
    for (const subscription of [...this.#feed.subscriptions]) subscription.notify();
  }

  /** A subscription that starts with the Task as it is now; null once the turn has ended. */
  subscribe(snapshot: (view: TaskView) => Task): Subscription | null {
    if (this.#feed.ended) return null;
    const subscription = new Subscription(snapshot(this.view), this.#feed);
    this.#feed.subscriptions.add(subscription);
    return subscription;
  }

  /** Streams reading this task (for tests and logs). */
  get subscriberCount(): number {
    return this.#feed.subscriptions.size;
  }

  /** The turn is over: every stream reads what is left of the feed, then ends. */
  end(): void {
    if (this.#feed.ended) return;
    this.#feed.ended = true;
    for (const subscription of [...this.#feed.subscriptions]) subscription.notify();
    this.#finish();
  }
}
