// --max-turns, --max-tokens and --max-usd for agents reins does not run itself (the harness CLIs,
// a command-driver program): what each limit becomes depends on what the agent lets reins see or
// do. A limit the CLI has a flag for is passed to it (native); one reins can watch as the turn
// goes (live: usage the agent reports while it runs) stops the agent once crossed, with a
// budget.warning at 80 % and at 100 %; one reins sees only when the turn ends is checked then and
// recorded; and whatever cannot be enforced is said before the turn starts, never ignored.
import type { Usage } from "../store/mod.ts";
import type { Budget, EventSink } from "./driver.ts";
import { exhaustionReason } from "../core/budget.ts";

export type BudgetLimit = "turns" | "tokens" | "usd";

/** What an agent lets reins do with each limit. */
export interface BudgetSupport {
  /** Limits the CLI enforces itself, from flags the driver passes it. */
  native: readonly BudgetLimit[];
  /** Limits reins sees crossed while the agent runs, and so can stop it for. */
  live: readonly BudgetLimit[];
  /** Limits reins sees only in the usage the agent reports when its turn ends. */
  atEnd: readonly BudgetLimit[];
}

/** Usage so far (running totals): model calls, input + output tokens, dollars. */
export interface BudgetUse {
  requests: number | null;
  tokens: number | null;
  costUsd: number | null;
}

export interface Exhaustion {
  limit: BudgetLimit;
  used: number;
  max: number;
}

const FLAG: Record<BudgetLimit, "--max-turns" | "--max-tokens" | "--max-usd"> = {
  turns: "--max-turns",
  tokens: "--max-tokens",
  usd: "--max-usd",
};

function maxOf(budget: Budget, limit: BudgetLimit): number | undefined {
  return limit === "turns"
    ? budget.maxTurns
    : limit === "tokens"
    ? budget.maxTokens
    : budget.maxUsd;
}

function usedOf(use: BudgetUse, limit: BudgetLimit): number | null {
  return limit === "turns" ? use.requests : limit === "tokens" ? use.tokens : use.costUsd;
}

/** The limits of `budget` that are set, in flag order. */
export function limitsSet(budget: Budget): BudgetLimit[] {
  return (["turns", "tokens", "usd"] as const).filter((limit) =>
    maxOf(budget, limit) !== undefined
  );
}

/**
 * What is said before a turn starts: the limits of `budget` that `cli` cannot hold to while it
 * runs (checked only when it ends, or not at all).
 */
export function budgetNotes(budget: Budget, support: BudgetSupport, cli: string): string[] {
  const set = limitsSet(budget).filter((limit) =>
    !support.native.includes(limit) && !support.live.includes(limit)
  );
  const atEnd = set.filter((limit) => support.atEnd.includes(limit));
  const never = set.filter((limit) => !support.atEnd.includes(limit));
  const flags = (limits: BudgetLimit[]) => limits.map((limit) => FLAG[limit]).join(" and ");
  const notes: string[] = [];
  if (atEnd.length > 0) {
    notes.push(
      `${cli} reports its usage only when its turn ends: ${flags(atEnd)} cannot stop it; the ` +
        "usage is checked then and a budget.warning recorded if it went over",
    );
  }
  if (never.length > 0) {
    notes.push(`${cli} does not report what ${flags(never)} limits: it cannot be enforced`);
  }
  return notes;
}

/** Watches the live limits of a turn: warns at 80 %, and at 100 % records it and stops the agent. */
export class BudgetWatch {
  readonly #budget: Budget;
  readonly #limits: BudgetLimit[];
  readonly #sink: EventSink;
  readonly #stop: () => void;
  #warned = false;
  #exhausted: Exhaustion | null = null;

  constructor(
    budget: Budget,
    support: Pick<BudgetSupport, "live">,
    context: { sink: EventSink; stop: () => void },
  ) {
    this.#budget = budget;
    this.#limits = limitsSet(budget).filter((limit) => support.live.includes(limit));
    this.#sink = context.sink;
    this.#stop = context.stop;
  }

  /** Set once a live limit was crossed and the agent stopped for it. */
  get exhausted(): Exhaustion | null {
    return this.#exhausted;
  }

  /** Takes the usage so far; crossing a limit stops the agent (once). */
  observe(use: BudgetUse): void {
    if (this.#exhausted !== null) return;
    const reading = readUse(this.#budget, this.#limits, use);
    if (reading === null) return;
    // Compared rounded, as recorded: 0.02 of 0.025 is 0.7999999999999999 in floating point.
    const ratio = Math.round(reading.ratio * 1000) / 1000;
    if (ratio >= 1) {
      this.#exhausted = { limit: reading.limit, used: reading.used, max: reading.max };
      this.#sink.emit({ type: "budget.warning", payload: { ratio, limit: reading.limit } });
      this.#stop();
      return;
    }
    if (ratio >= 0.8 && !this.#warned) {
      this.#warned = true;
      this.#sink.emit({ type: "budget.warning", payload: { ratio, limit: reading.limit } });
    }
  }

  /** The reason of a run stopped for its budget, in every driver's one wording. */
  static reason(exhaustion: Exhaustion): string {
    return exhaustionReason({ scope: "turn", ...exhaustion });
  }
}

/**
 * The usage a turn ended with against every limit set: a budget.warning (ratio ≥ 1) when it went
 * over one that nothing enforced while it ran. Returns whether it did.
 */
export function checkFinalUse(
  budget: Budget,
  limits: readonly BudgetLimit[],
  use: BudgetUse,
  sink: EventSink,
): Exhaustion | null {
  const reading = readUse(budget, limits, use);
  if (reading === null || reading.ratio < 1) return null;
  sink.emit({
    type: "budget.warning",
    payload: { ratio: Math.round(reading.ratio * 1000) / 1000, limit: reading.limit },
  });
  return { limit: reading.limit, used: reading.used, max: reading.max };
}

/** `--max-usd 0.1: $0.1234 used`, `--max-turns 3: 3 model calls`. */
export function describeUse({ limit, used, max }: Exhaustion): string {
  const shown = limit === "usd" ? `$${Math.round(used * 1e4) / 1e4}` : String(used);
  const unit = limit === "turns" ? " model calls" : limit === "tokens" ? " tokens" : "";
  return `${FLAG[limit]} ${max}: ${shown}${unit} used`;
}

function readUse(budget: Budget, limits: readonly BudgetLimit[], use: BudgetUse) {
  let best: { limit: BudgetLimit; ratio: number; used: number; max: number } | null = null;
  for (const limit of limits) {
    const max = maxOf(budget, limit);
    const used = usedOf(use, limit);
    if (max === undefined || used === null) continue;
    const ratio = max <= 0 ? 1 : used / max;
    if (best === null || ratio > best.ratio) best = { limit, ratio, used, max };
  }
  return best;
}

/** Usage totals as the budget counts them: model calls, input + output tokens, dollars. */
export function budgetUse(usage: Usage) {
  const tokens = usage.inputTokens === null && usage.outputTokens === null
    ? null
    : (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
  return { requests: usage.requests, tokens, costUsd: usage.costUsd };
}
