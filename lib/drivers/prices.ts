// What a model costs, for harnesses that report tokens but no cost (Codex, Gemini CLI). A small
// table of list prices, overridden and extended by the config file's `prices`; a cost from here
// is always marked `costEstimated`. Not a billing system: it ignores tiers, batch rates and
// discounts, and a model it does not know gets no cost at all rather than a guess.
import type { Settings } from "../core/mod.ts";

export type ModelPrice = Settings["prices"][string];

/**
 * USD per million tokens, list prices as published by OpenAI and Google in 2025 (standard tier;
 * Gemini at prompts up to 200k tokens). Newer models (Codex 0.171 defaults to gpt-5.5) are not
 * here: add them under `prices` in the config file. See docs/harnesses.md.
 */
export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = {
  "gpt-5": { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 },
  "gpt-5-codex": { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 },
  "gpt-5.1": { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 },
  "gpt-5.1-codex": { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 },
  "gpt-5-mini": { inputPerMillion: 0.25, cachedInputPerMillion: 0.025, outputPerMillion: 2 },
  "gpt-5-nano": { inputPerMillion: 0.05, cachedInputPerMillion: 0.005, outputPerMillion: 0.4 },
  "gpt-4.1": { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 },
  "gpt-4.1-mini": { inputPerMillion: 0.4, cachedInputPerMillion: 0.1, outputPerMillion: 1.6 },
  "gpt-4o-mini": { inputPerMillion: 0.15, cachedInputPerMillion: 0.075, outputPerMillion: 0.6 },
  "o3": { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 },
  "o4-mini": { inputPerMillion: 1.1, cachedInputPerMillion: 0.275, outputPerMillion: 4.4 },
  "gemini-2.5-pro": { inputPerMillion: 1.25, cachedInputPerMillion: 0.31, outputPerMillion: 10 },
  "gemini-2.5-flash": { inputPerMillion: 0.3, outputPerMillion: 2.5 },
  // Anthropic's list prices of 2025 (cache reads at a tenth of input; cache writes, which cost
  // 1.25× input, are priced as input).
  "claude-sonnet-4-5": { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15 },
  "claude-sonnet-4": { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15 },
  "claude-haiku-4-5": { inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 5 },
  "claude-opus-4-1": { inputPerMillion: 15, cachedInputPerMillion: 1.5, outputPerMillion: 75 },
  "claude-opus-4-5": { inputPerMillion: 5, cachedInputPerMillion: 0.5, outputPerMillion: 25 },
};

/** The price of `model`: the config's entry first, then the table; null when neither has it. */
export function priceOf(
  model: string | null,
  overrides: Settings["prices"],
): ModelPrice | null {
  if (model === null) return null;
  return overrides[model] ?? DEFAULT_PRICES[model] ?? null;
}

/**
 * The price of a model as an API names it in a call: the config's entry or the table's for the
 * name as given, else for the name without a provider prefix (`models/`, `anthropic/`) or a date
 * suffix (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`).
 */
export function priceOfModel(model: string, overrides: Settings["prices"]): ModelPrice | null {
  const bare = model.replace(/^.*\//, "");
  const undated = bare.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, "");
  return priceOf(model, overrides) ?? priceOf(bare, overrides) ?? priceOf(undated, overrides);
}

export interface BilledTokens {
  /** All input tokens, cached ones included (as OpenAI and Google count them). */
  inputTokens: number;
  /** The part of inputTokens read from the cache. */
  cachedInputTokens: number;
  /** Output tokens, reasoning included. */
  outputTokens: number;
}

/** The cost of `tokens` at `price`, in USD; cached input at the input price when none is given. */
export function estimateCostUsd(price: ModelPrice, tokens: BilledTokens): number {
  const cached = Math.min(tokens.cachedInputTokens, tokens.inputTokens);
  const uncached = tokens.inputTokens - cached;
  const cost = uncached * price.inputPerMillion +
    cached * (price.cachedInputPerMillion ?? price.inputPerMillion) +
    tokens.outputTokens * price.outputPerMillion;
  // Rounded to a millionth of a cent so sums do not show float noise.
  return Math.round(cost / 1e6 * 1e8) / 1e8;
}

/**
 * The line that says a model has no price, for a CLI that reports tokens but no cost (its cost is
 * then null, not guessed); none when `model` is unnamed or priced.
 */
export function unpricedNotes(
  model: string | null,
  overrides: Settings["prices"],
  cli: string,
): string[] {
  if (model === null || priceOf(model, overrides) !== null) return [];
  return [
    `no price is known for the model ${JSON.stringify(model)} (not in the config file's prices ` +
    `nor in reins's table): ${cli} reports no cost, so the run's cost is left unknown; add ` +
    `it under prices in the config file (docs/harnesses.md)`,
  ];
}
