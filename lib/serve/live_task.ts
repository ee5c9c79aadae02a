// A task whose turn runs in this server: its view kept current from the events the turn stores,
// and the streams watching it. Each event is folded in once, in sequence order, and what it
// causes goes to every subscriber in that same order (A2A 1.0 §3.5.2); an event that arrives
// after a gap (an answer appended by `reins approve` in another shell) brings the missing ones in
// from the log first. A subscriber that stops reading is dropped once its queue is full, so one
// slow client costs bounded memory and never holds the others back.
import type { RunEvent } from "../store/contracts.ts";
import type { StreamResponse, Task } from "./a2a/wire.ts";
import { INTERRUPTED_STATES, TERMINAL_STATES } from "./a2a/wire.ts";
import type { TaskView } from "./task_view.ts";

/** Items a subscriber may fall behind by before it is dropped. */
export const MAX_QUEUED_ITEMS = 10_000;

/** Whether a stream item ends a stream that closes at `interrupted` states as well as terminal. */
export function endsStream(item: StreamResponse, atInterrupted: boolean): boolean {
  if (!("statusUpdate" in item)) return false;
  const state = item.statusUpdate.status.state;
  return TERMINAL_STATES.has(state) || (atInterrupted && INTERRUPTED_STATES.has(state));
}

export class Subscription {
  /** The Task as it stood when the subscription began: the stream's first item. */
  readonly first: Task;
  readonly #queue: StreamResponse[] = [];
  #wake: (() => void) | null = null;
  #closed = false;
  /** Set when the subscriber fell too far behind and was dropped. */
  overflowed = false;
  readonly #onClose: (subscription: Subscription) => void;

  constructor(first: Task, onClose: (subscription: Subscription) => void) {
    this.first = first;
    this.#onClose = onClose;
  }

  push(item: StreamResponse): void {
    if (this.#closed) return;
    if (this.#queue.length >= MAX_QUEUED_ITEMS) {
      this.overflowed = true;
      this.close();
      return;
    }
    this.#queue.push(item);
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
      const item = this.#queue.shift();
      if (item !== undefined) return item;
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
