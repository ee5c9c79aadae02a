// The hard budget of a turn, one ledger for every driver: --max-turns (model calls), --max-tokens
// (input + output) and --max-usd, for the turn itself and, when set, for its context or its suite
// scenario (the sum over their turns, this one included). Before a model call starts, `refusal()`
// says whether it may: once a limit is reached, no call starts. Calls are counted when they start
// and their tokens and cost when they end, so the overshoot of --max-tokens and --max-usd is at
// most the calls in flight when the limit was crossed. It warns once at 80 % and once at 100 % of
// each limit. It only counts: the built-in loop and the model gateway ask it and act.

export type BudgetLimit = "turns" | "tokens" | "usd";
export const BUDGET_LIMITS: readonly BudgetLimit[] = ["turns", "tokens", "usd"];

export interface Limits {
  maxTurns?: number;
  maxTokens?: number;
  maxUsd?: number;
}

/** What a scope had spent before this turn (a context's or scenario's earlier turns). */
export interface Spent {
  calls: number;
  tokens: number;
  usd: number;
}

export const NOTHING_SPENT: Spent = { calls: 0, tokens: 0, usd: 0 };

/** Whose limits: the turn's own, its context's, its suite scenario's. */
export type BudgetScopeName = "turn" | "context" | "scenario";

export interface BudgetScope {
  scope: BudgetScopeName;
  limits: Limits;
  spentBefore?: Spent;
}

export interface Exhaustion {
  scope: BudgetScopeName;
  limit: BudgetLimit;
  used: number;
  max: number;
}

/** A budget.warning to record: `ratio` of `limit` used (≥ 1: reached). */
export interface BudgetWarning {
  ratio: number;
  limit: BudgetLimit;
  scope: BudgetScopeName;
}

const FLAGS: Record<BudgetLimit, string> = {
  turns: "--max-turns",
  tokens: "--max-tokens",
  usd: "--max-usd",
};

function maxOf(limits: Limits, limit: BudgetLimit): number | undefined {
  return limit === "turns"
    ? limits.maxTurns
    : limit === "tokens"
    ? limits.maxTokens
    : limits.maxUsd;
}

/** Whether any limit is set in `scopes`. */
export function anyLimit(scopes: readonly BudgetScope[]): boolean {
  return scopes.some((scope) =>
    BUDGET_LIMITS.some((limit) => maxOf(scope.limits, limit) !== undefined)
  );
}

/** Counts one turn's model calls, tokens and dollars against its scopes' limits. */
export class BudgetLedger {
  readonly scopes: readonly BudgetScope[];
  /** This turn's own spending. */
  readonly spent: Spent = { calls: 0, tokens: 0, usd: 0 };
  /** Calls whose cost was unknown (no price): --max-usd could not count them. */
  unpricedCalls = 0;
  #exhausted: Exhaustion | null = null;
  readonly #warned = new Set<string>();

  constructor(scopes: readonly BudgetScope[]) {
    this.scopes = scopes.filter((scope) =>
      BUDGET_LIMITS.some((limit) => maxOf(scope.limits, limit) !== undefined)
    );
  }

  /** A ledger of the turn's own limits alone. */
  static of(limits: Limits): BudgetLedger {
    return new BudgetLedger([{ scope: "turn", limits }]);
  }

  get limited(): boolean {
    return this.scopes.length > 0;
  }

  /** Set once a call was refused: the turn ends for its budget. */
  get exhausted(): Exhaustion | null {
    return this.#exhausted;
  }

  #used(scope: BudgetScope, limit: BudgetLimit): number {
    const before = scope.spentBefore ?? NOTHING_SPENT;
    return limit === "turns"
      ? before.calls + this.spent.calls
      : limit === "tokens"
      ? before.tokens + this.spent.tokens
      : before.usd + this.spent.usd;
  }

  /**
   * Whether a model call may start: null when it may, else the limit it is refused for (the
   * ledger then counts as exhausted). A limit of 0 refuses the first call.
   */
  refusal(): Exhaustion | null {
    for (const scope of this.scopes) {
      for (const limit of BUDGET_LIMITS) {
        const max = maxOf(scope.limits, limit);
        if (max === undefined) continue;
        const used = this.#used(scope, limit);
        // Compared rounded, as recorded: 0.02 + 0.005 is 0.025000000000000001 in floating point.
        if (Math.round(used * 1e8) >= Math.round(max * 1e8)) {
          this.#exhausted ??= { scope: scope.scope, limit, used, max };
          return { scope: scope.scope, limit, used, max };
        }
      }
    }
    return null;
  }

  /** A call starts: it is counted; the warnings its count crosses are returned. */
  startCall(): BudgetWarning[] {
    this.spent.calls += 1;
    return this.#warnings(["turns"]);
  }

  /** A call ended with `tokens` and `usd` (null: its cost is unknown); the warnings crossed. */
  endCall(tokens: number, usd: number | null): BudgetWarning[] {
    this.spent.tokens += tokens;
    if (usd === null) this.unpricedCalls += 1;
    else this.spent.usd = Math.round((this.spent.usd + usd) * 1e8) / 1e8;
    return this.#warnings(["tokens", "usd"]);
  }

  #warnings(limits: readonly BudgetLimit[]): BudgetWarning[] {
    const out: BudgetWarning[] = [];
    for (const scope of this.scopes) {
      for (const limit of limits) {
        const max = maxOf(scope.limits, limit);
        if (max === undefined) continue;
        const ratio = max <= 0 ? 1 : Math.round(this.#used(scope, limit) / max * 1000) / 1000;
        for (const mark of [0.8, 1]) {
          const key = `${scope.scope}:${limit}:${mark}`;
          if (ratio < mark || this.#warned.has(key)) continue;
          this.#warned.add(key);
          // One warning for both marks when a call crosses them at once.
          if (mark === 0.8 && ratio >= 1) this.#warned.add(`${scope.scope}:${limit}:1`);
          out.push({ ratio, limit, scope: scope.scope });
          break;
        }
      }
    }
    return out;
  }
}

/** The flag that sets a limit, with its scope: `--max-usd`, `the context's --max-turns`. */
export function limitName(scope: BudgetScopeName, limit: BudgetLimit): string {
  const flag = FLAGS[limit];
  return scope === "turn" ? flag : `the ${scope}'s ${flag}`;
}

function amount(limit: BudgetLimit, value: number): string {
  if (limit === "usd") return `$${Math.round(value * 1e4) / 1e4}`;
  return String(Math.round(value)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/**
 * The reason of a run its budget ended, the same for every driver:
 * `budget exhausted: --max-turns 3 (3 of 3 model calls)`,
 * `budget exhausted: --max-usd 0.025 ($0.0262 of $0.025)`.
 */
export function exhaustionReason({ scope, limit, used, max }: Exhaustion): string {
  const unit = limit === "turns" ? " model calls" : limit === "tokens" ? " tokens" : "";
  return `budget exhausted: ${limitName(scope, limit)} ${max} (${amount(limit, used)} of ${
    amount(limit, max)
  }${unit})`;
}

/** The code a budget-ended run's terminal event carries (`code` of `failed`). */
export const BUDGET_EXHAUSTED = "budget_exhausted";
