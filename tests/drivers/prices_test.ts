// The price table and the cost estimate of harnesses that report tokens only.
import assert from "node:assert/strict";
import fc from "fast-check";
import { DEFAULT_PRICES, estimateCostUsd, priceOf } from "../../lib/drivers/prices.ts";

Deno.test("priceOf() prefers the config's price, then the table, and knows no other model", () => {
  const own = { inputPerMillion: 9, outputPerMillion: 9 };
  assert.deepEqual(priceOf("gpt-5", { "gpt-5": own }), own);
  assert.deepEqual(priceOf("gpt-5", {}), DEFAULT_PRICES["gpt-5"]);
  assert.equal(priceOf("gpt-5.5", {}), null);
  assert.equal(priceOf(null, { "gpt-5": own }), null);
});

Deno.test("estimateCostUsd() bills cached input at the cached price, else at the input price", () => {
  const price = { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 };
  assert.equal(
    estimateCostUsd(price, {
      inputTokens: 1_000_000,
      cachedInputTokens: 200_000,
      outputTokens: 50_000,
    }),
    0.8 * 1.25 + 0.2 * 0.125 + 0.05 * 10,
  );
  assert.equal(
    estimateCostUsd({ inputPerMillion: 2, outputPerMillion: 0 }, {
      inputTokens: 1_000_000,
      cachedInputTokens: 400_000,
      outputTokens: 0,
    }),
    2,
  );
});

Deno.test("estimateCostUsd() never goes below zero nor counts more cached than input tokens", () => {
  fc.assert(fc.property(
    fc.nat(10_000_000),
    fc.nat(20_000_000),
    fc.nat(10_000_000),
    (input, cached, output) => {
      const price = DEFAULT_PRICES["gpt-5"];
      const cost = estimateCostUsd(price, {
        inputTokens: input,
        cachedInputTokens: cached,
        outputTokens: output,
      });
      const most = (input * price.inputPerMillion + output * price.outputPerMillion) / 1e6;
      return cost >= 0 && cost <= most + 1e-8;
    },
  ));
});
