// Usage totals of one loop run, the `usage.updated` payload: tokens, cost (the model's own or
// estimated from a price), model calls. The budget they are held to is lib/core/budget.ts's.
import type { CallUsage, Usage } from "../../store/mod.ts";
import type { Settings } from "../../core/mod.ts";

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
