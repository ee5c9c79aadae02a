// One turn's place in the gateway: the secret its harness's requests carry in their path, the
// routes (upstream base URLs) they may go to, and what a call of the turn records into and counts
// against — the run's events, its bodies, its budget ledger. The turn engine binds a turn before
// its harness starts and closes the binding once it has exited; nothing of one binding is seen
// by another.
import type { BudgetLedger, BudgetWarning, Exhaustion } from "../core/mod.ts";
import type { ProxySettings } from "../net/mod.ts";
import type { CallUsage, DataRoot, EventInput } from "../store/mod.ts";
import { onceAfter } from "../core/clock.ts";
import { RunBodies } from "./bodies.ts";
import { secretReach, secretTailStart } from "./redacted_bytes.ts";
import { ownString } from "./sse.ts";
import { inputExcludesCache, type Wire } from "./wires.ts";

/** A model's price per million tokens (as the config file's `prices` give it). */
export interface Price {
  inputPerMillion: number;
  cachedInputPerMillion?: number;
  outputPerMillion: number;
}

/** Where a route's calls go: its upstream, or another one for requests carrying a header. */
export interface RouteTarget {
  upstream: string;
  /** A request with this header goes to `upstream` instead (Codex's ChatGPT sign-in, say). */
  whenHeader?: { name: string; upstream: string };
}

/** Upstream trouble a turn may want to act on: a 5xx or 429, or no answer at all. */
export interface UpstreamTrouble {
  status: number;
  message: string;
  /** Failed generation calls in a row, this one included. */
  inARow: number;
}

export interface BindOptions {
  root: DataRoot;
  runId: string;
  routes: Readonly<Record<string, RouteTarget>>;
  /** The run's recorder: every event of the turn's calls goes here. */
  emit(event: EventInput): void;
  ledger: BudgetLedger;
  priceOf(model: string): Price | null;
  proxy: ProxySettings;
  /** A call was refused for the budget (once per refusal). */
  onExhausted?(exhaustion: Exhaustion): void;
  onTrouble?(trouble: UpstreamTrouble): void;
  warn?(message: string): void;
}

/** What one call needs of its turn (lib/gateway/call.ts). */
export interface CallContext {
  readonly bodies: RunBodies;
  readonly ledger: BudgetLedger;
  readonly proxy: ProxySettings;
  nextCallId(): string;
  /**
   * Aborted as the turn closes (its harness has exited): a call still waiting for its model
   * server's answer then is given up, and recorded so, before the turn's recording ends.
   */
  readonly ending: AbortSignal;
  /** A call until it is answered (or given up): the turn's close waits for it to be recorded. */
  waiting(call: Promise<unknown>): void;
  emit(event: EventInput): void;
  exhausted(exhaustion: Exhaustion): void;
  budgetWarnings(warnings: readonly BudgetWarning[]): void;
  /** A piece of streamed text of a call, gathered into `message.delta` events. */
  delta(callId: string, piece: string): void;
  flushDelta(callId: string): void;
  /** The usage with its cost, when the model has a price (null usage stays null). */
  price(model: string | null, usage: CallUsage | null, wire: Wire): CallUsage | null;
  upstreamTrouble(status: number, message: string): void;
  upstreamFine(): void;
  warn(message: string): void;
}

const DELTA_EVERY_MS = 100;

/**
 * A call's streamed text gathered for its next `message.delta`, and the timer that records it
 * (null: none running). The end of the text that may begin a known secret is kept for the event
 * after, so that a secret the model streams in pieces is whole in one event (which the event log
 * redacts) and never cut between two. What is held is text of its own: never a slice of a
 * longer piece (a slice keeps the whole of its piece alive), nor the pieces joined into a copy.
 */
interface PendingDelta {
  /** The text gathered, its pieces joined as V8 joins strings: not looked into here (a copy). */
  text: string;
  /** Its last characters, as many as a known secret's beginning may have: looked into instead. */
  end: string;
  /** How many that was when `end` was taken (a secret remembered since may reach further). */
  reach: number;
  timer: { cancel(): void } | null;
}
/** Streamed text gathered past this is recorded at once: an event's size stays bounded. */
const DELTA_MAX_CHARS = 16 * 1024;

/** How many characters at the end of `end` may begin a known secret (0: none). */
function heldLength(end: string): number {
  return end.length - secretTailStart(end);
}

/** The last `reach` characters of a text ending in `end` that goes on with `added`, of their own. */
function endOf(end: string, added: string, reach: number): string {
  if (reach === 0) return "";
  if (added.length >= reach) return ownString(added.slice(added.length - reach));
  const joined = end + added;
  return ownString(joined.length <= reach ? joined : joined.slice(joined.length - reach));
}

export class GatewayBinding implements CallContext {
  readonly secret: string;
  readonly bodies: RunBodies;
  readonly ledger: BudgetLedger;
  readonly proxy: ProxySettings;
  readonly routes: Readonly<Record<string, RouteTarget>>;
  readonly #options: BindOptions;
  #calls = 0;
  #failedInARow = 0;
  #closed = false;
  /** Closed and every call of it recorded: nothing more is emitted. */
  #recorded = false;
  readonly #deltas = new Map<string, PendingDelta>();
  readonly #unpricedSaid = new Set<string>();
  /** The base URL a harness is pointed at: `http://127.0.0.1:PORT/SECRET`; routes go below. */
  readonly baseUrl: string;
  readonly #unbind: () => Promise<void>;
  #unbound: Promise<void> = Promise.resolve();
  readonly #ending = new AbortController();
  readonly #waiting = new Set<Promise<unknown>>();

  constructor(
    options: BindOptions,
    secret: string,
    origin: string,
    unbind: () => Promise<void>,
  ) {
    this.#options = options;
    this.secret = secret;
    this.routes = options.routes;
    this.bodies = new RunBodies(options.root, options.runId);
    this.ledger = options.ledger;
    this.proxy = options.proxy;
    this.baseUrl = `${origin}/${secret}`;
    this.#unbind = unbind;
  }

  /** The URL a harness is given for `route`. */
  routeUrl(route: string): string {
    return `${this.baseUrl}/${route}`;
  }

  /** The calls recorded so far. */
  get calls(): number {
    return this.#calls;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The upstream of a request on `route` (null: no such route). */
  upstreamOf(route: string, headers: Headers): string | null {
    const target = this.routes[route];
    if (target === undefined) return null;
    if (target.whenHeader && headers.has(target.whenHeader.name)) return target.whenHeader.upstream;
    return target.upstream;
  }

  nextCallId(): string {
    return `call-${++this.#calls}`;
  }

  get ending(): AbortSignal {
    return this.#ending.signal;
  }

  waiting(call: Promise<unknown>): void {
    const tracked = call.then(() => {}, () => {}).finally(() => this.#waiting.delete(tracked));
    this.#waiting.add(tracked);
  }

  emit(event: EventInput): void {
    // Nothing of the turn is recorded once its recording has ended.
    if (this.#recorded) return;
    this.#options.emit(event);
  }

  exhausted(exhaustion: Exhaustion): void {
    this.#options.onExhausted?.(exhaustion);
  }

  budgetWarnings(warnings: readonly BudgetWarning[]): void {
    for (const { ratio, limit, scope } of warnings) {
      this.emit({
        type: "budget.warning",
        payload: { ratio, limit, ...(scope === "turn" ? {} : { scope }) },
      });
    }
  }

  delta(callId: string, piece: string): void {
    if (piece === "") return;
    let pending = this.#deltas.get(callId);
    if (pending === undefined) {
      pending = { text: "", end: "", reach: 0, timer: null };
      this.#deltas.set(callId, pending);
    }
    if (pending.timer === null) {
      // One timer a call's gathering, kept while its text comes: the events of bounded size a
      // long answer fills are recorded as they fill, not each with a timer of its own.
      // (onceAfter, not setTimeout: the first setTimeout of a process loads Deno's Node timers,
      // 7-19 ms of CPU measured here, which a turn would spend on its first streamed text.)
      const entry = pending;
      entry.timer = onceAfter(DELTA_EVERY_MS, () => {
        if (this.#deltas.get(callId) !== entry) return;
        entry.timer = null;
        this.#emitGathered(callId, entry);
      });
    }
    // A long piece (a text run read at once tells many events' text) is recorded in events of
    // bounded size, each ending before what may begin a secret.
    const reach = secretReach();
    if (reach > pending.reach) this.#reachFurther(pending, reach);
    let { text, end } = pending;
    let at = 0;
    while (text.length + piece.length - at >= DELTA_MAX_CHARS) {
      const part = piece.slice(at, at + DELTA_MAX_CHARS - text.length);
      let held = heldLength(endOf(end, part, reach));
      // (Only a secret longer than an event could begin at its start: it is cut, as it must be.)
      if (held >= text.length + part.length) held = 0;
      if (held <= part.length) {
        // What may begin a secret is in the piece: it is read again as the next event's start.
        this.#emitDelta(callId, text + (held === 0 ? part : part.slice(0, part.length - held)));
        at += part.length - held;
        text = "";
        end = "";
      } else {
        // It reaches back into what was gathered before (a secret's beginning in tiny pieces).
        const whole = text + part;
        this.#emitDelta(callId, whole.slice(0, whole.length - held));
        text = end = ownString(whole.slice(whole.length - held));
        at += part.length;
      }
    }
    // (A piece may itself be a slice of the answer's text: it is held as a copy too.)
    const rest = ownString(at === 0 ? piece : piece.slice(at));
    pending.text = text + rest;
    pending.end = endOf(end, rest, reach);
    pending.reach = reach;
  }

  /** A secret longer than any before was remembered: `pending.end` is taken again, longer. */
  #reachFurther(pending: PendingDelta, reach: number): void {
    pending.end = ownString(pending.text.slice(Math.max(0, pending.text.length - reach)));
    pending.reach = reach;
  }

  /** Records what `pending` gathered, but for the end that may begin a secret: that is kept. */
  #emitGathered(callId: string, pending: PendingDelta): void {
    const reach = secretReach();
    if (reach > pending.reach) this.#reachFurther(pending, reach);
    const held = heldLength(pending.end);
    const text = pending.text;
    if (held === 0) {
      this.#emitDelta(callId, text);
      this.#deltas.delete(callId);
      return;
    }
    this.#emitDelta(callId, text.slice(0, text.length - held));
    pending.text = pending.end = ownString(pending.end.slice(pending.end.length - held));
  }

  #emitDelta(callId: string, text: string): void {
    if (this.#recorded || text === "") return;
    this.emit({ type: "message.delta", payload: { role: "assistant", text, callId } });
  }

  /** The call's text has all come: what was gathered (and kept back) is recorded. */
  flushDelta(callId: string): void {
    const pending = this.#deltas.get(callId);
    if (pending === undefined) return;
    pending.timer?.cancel();
    this.#deltas.delete(callId);
    this.#emitDelta(callId, pending.text);
  }

  price(model: string | null, usage: CallUsage | null, wire: Wire): CallUsage | null {
    if (usage === null) return null;
    const price = model === null ? null : this.#options.priceOf(model);
    if (price === null) {
      const name = model ?? "(unnamed)";
      if (
        this.ledger.scopes.some((scope) => scope.limits.maxUsd !== undefined) &&
        !this.#unpricedSaid.has(name)
      ) {
        this.#unpricedSaid.add(name);
        this.emit({
          type: "problem",
          payload: {
            source: "gateway",
            reason: `the cost of ${name} is unknown (no price for it in the config file's ` +
              `prices, nor in reins's table): --max-usd cannot count its calls`,
          },
        });
      }
      return usage;
    }
    return { ...usage, costUsd: costOf(price, usage, wire), costEstimated: true };
  }

  upstreamTrouble(status: number, message: string): void {
    this.#failedInARow++;
    this.emit({
      type: "problem",
      payload: {
        source: "gateway",
        reason: `the model server answered ${status}${message ? `: ${message}` : ""}`,
      },
    });
    this.#options.onTrouble?.({ status, message, inARow: this.#failedInARow });
  }

  upstreamFine(): void {
    this.#failedInARow = 0;
  }

  warn(message: string): void {
    this.#options.warn?.(message);
  }

  /**
   * Stops taking calls (the secret no longer works), lets the calls in flight be recorded to
   * their end (their text may still be streaming), and
   * resolves once every body is on disk; nothing of the turn is recorded after that.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      // The harness has exited: a call still waiting for its model server is given up (not left
      // to be answered, and billed, after the turn), and recorded before the server is let go.
      this.#ending.abort(new DOMException("the turn ended", "AbortError"));
      this.#unbound = Promise.allSettled([...this.#waiting]).then(() => this.#unbind());
    }
    try {
      while (this.#waiting.size > 0) await Promise.allSettled([...this.#waiting]);
      await this.bodies.flushed();
      await this.#unbound;
    } finally {
      for (const callId of [...this.#deltas.keys()]) this.flushDelta(callId);
      this.#recorded = true;
    }
  }
}

/**
 * The cost of one call's usage at `price`. Anthropic counts input without the cache: its cache
 * reads are priced as cached input and its cache writes as input; elsewhere input includes the
 * cached tokens, the part read from the cache priced as cached input.
 */
export function costOf(price: Price, usage: CallUsage, wire: Wire): number {
  const cachedPrice = price.cachedInputPerMillion ?? price.inputPerMillion;
  const input = usage.inputTokens ?? 0;
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const output = usage.outputTokens ?? 0;
  const cost = inputExcludesCache(wire)
    ? (input + write) * price.inputPerMillion + read * cachedPrice +
      output * price.outputPerMillion
    : (Math.max(0, input - read)) * price.inputPerMillion + Math.min(read, input) * cachedPrice +
      output * price.outputPerMillion;
  return Math.round(cost / 1e6 * 1e8) / 1e8;
}
