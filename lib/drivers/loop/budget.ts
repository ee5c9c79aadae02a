// Usage totals of one run and the budget they are held to (--max-turns, --max-tokens,
// --max-usd). The budget only measures; the loop decides what happens at 80 % and at 100 %.
import type { Budget } from "../driver.ts";
import type { CallUsage, Usage } from "../../store/contracts.ts";
import type { Settings } from "../../core/config.ts";

/** Running totals, the `usage.updated` payload. */
export class UsageTotals {
  inputTokens = 0;
  outputTokens = 0;
  cacheReadTokens = 0;
  cacheWriteTokens = 0;
  reasoningTokens = 0;
  costUsd: number | null = null;
  costEstimated = false;
  requests = 0;

  /**
   * Adds one call's usage. Without a cost of its own, the price table (settings.prices, keyed
   * by model name) gives an estimate, marked as one.
   */
  add(usage: CallUsage | null, price?: Settings["prices"][string]): void {
    this.requests += 1;
    if (usage === null) return;
    this.inputTokens += usage.inputTokens ?? 0;
    this.outputTokens += usage.outputTokens ?? 0;
    this.cacheReadTokens += usage.cacheReadTokens ?? 0;
    this.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
    this.reasoningTokens += usage.reasoningTokens ?? 0;
    let cost = usage.costUsd;
    if (cost === undefined && price !== undefined) {
      const cached = usage.cacheReadTokens ?? 0;
      const uncached = Math.max(0, (usage.inputTokens ?? 0) - cached);
      cost = (uncached * price.inputPerMillion +
        cached * (price.cachedInputPerMillion ?? price.inputPerMillion) +
        (usage.outputTokens ?? 0) * price.outputPerMillion) / 1_000_000;
      this.costEstimated = true;
    }
    if (cost !== undefined) this.costUsd = (this.costUsd ?? 0) + cost;
  }

  get totalTokens(): number {
    return this.inputTokens + this.outputTokens;
  }

  toPayload(): Usage {
    const payload: Usage = {
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      cacheReadTokens: this.cacheReadTokens,
      cacheWriteTokens: this.cacheWriteTokens,
      reasoningTokens: this.reasoningTokens,
      costUsd: this.costUsd,
      requests: this.requests,
    };
    if (this.costEstimated) payload.costEstimated = true;
    return payload;
  }
}

export type BudgetLimit = "turns" | "tokens" | "usd";

export interface BudgetReading {
  /** The largest share of any limit used so far (0 when there is no budget). */
  ratio: number;
  /** The limit that share is of, or null without a budget. */
  limit: BudgetLimit | null;
}

/** How much of the budget is used after `turns` model turns and the usage so far. */
export function readBudget(budget: Budget, turns: number, usage: UsageTotals): BudgetReading {
  const shares: [BudgetLimit, number][] = [];
  if (budget.maxTurns !== undefined) shares.push(["turns", share(turns, budget.maxTurns)]);
  if (budget.maxTokens !== undefined) {
    shares.push(["tokens", share(usage.totalTokens, budget.maxTokens)]);
  }
  if (budget.maxUsd !== undefined) shares.push(["usd", share(usage.costUsd ?? 0, budget.maxUsd)]);
  let reading: BudgetReading = { ratio: 0, limit: null };
  for (const [limit, ratio] of shares) {
    if (reading.limit === null || ratio > reading.ratio) reading = { ratio, limit };
  }
  return reading;
}

function share(used: number, limit: number): number {
  // A zero limit is spent before anything is used.
  if (limit <= 0) return 1;
  return used / limit;
}
