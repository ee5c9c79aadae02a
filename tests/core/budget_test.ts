// The hard budget ledger every driver is held to: a call refused once a limit is reached (never
// past it), warnings at 80 % and 100 % of each limit once, a context's earlier spending counted,
// and one wording of the reason.
import assert from "node:assert/strict";
import { BudgetLedger, exhaustionReason } from "../../lib/core/budget.ts";

Deno.test("BudgetLedger.refusal() lets N calls start under --max-turns N and refuses the next", () => {
  const ledger = BudgetLedger.of({ maxTurns: 3 });
  const warnings = [];
  for (let i = 0; i < 3; i++) {
    assert.equal(ledger.refusal(), null);
    warnings.push(...ledger.startCall());
  }
  assert.deepEqual(ledger.refusal(), { scope: "turn", limit: "turns", used: 3, max: 3 });
  assert.deepEqual(ledger.exhausted, { scope: "turn", limit: "turns", used: 3, max: 3 });
  // 1/3, 2/3 below 80 %; 3/3 reached.
  assert.deepEqual(warnings, [{ ratio: 1, limit: "turns", scope: "turn" }]);
});

Deno.test("BudgetLedger warns at 80 % and at 100 % of each limit, once each", () => {
  const ledger = BudgetLedger.of({ maxTokens: 1000, maxUsd: 0.025 });
  assert.deepEqual(ledger.endCall(850, 0.005), [{ ratio: 0.85, limit: "tokens", scope: "turn" }]);
  assert.deepEqual(ledger.endCall(10, 0.015), [{ ratio: 0.8, limit: "usd", scope: "turn" }]);
  assert.deepEqual(ledger.endCall(10, 0), []);
  assert.equal(ledger.refusal(), null);
  assert.deepEqual(ledger.endCall(200, 0.005), [
    { ratio: 1.07, limit: "tokens", scope: "turn" },
    { ratio: 1, limit: "usd", scope: "turn" },
  ]);
  assert.deepEqual(ledger.refusal()?.limit, "tokens");
});

Deno.test("BudgetLedger says one warning when a call crosses 80 % and 100 % at once", () => {
  const ledger = BudgetLedger.of({ maxUsd: 0.01 });
  assert.deepEqual(ledger.endCall(0, 0.012), [{ ratio: 1.2, limit: "usd", scope: "turn" }]);
  assert.deepEqual(ledger.endCall(0, 0.01), []);
});

Deno.test("BudgetLedger counts a context's earlier turns against its own limits", () => {
  const ledger = new BudgetLedger([
    { scope: "turn", limits: { maxTurns: 10 } },
    { scope: "context", limits: { maxTurns: 5 }, spentBefore: { calls: 4, tokens: 0, usd: 0 } },
  ]);
  assert.equal(ledger.refusal(), null);
  ledger.startCall();
  assert.deepEqual(ledger.refusal(), { scope: "context", limit: "turns", used: 5, max: 5 });
  assert.equal(
    exhaustionReason(ledger.exhausted!),
    "budget exhausted: the context's --max-turns 5 (5 of 5 model calls)",
  );
});

Deno.test("exhaustionReason() says the limit and what was used of it", () => {
  assert.equal(
    exhaustionReason({ scope: "turn", limit: "usd", used: 0.02623, max: 0.025 }),
    "budget exhausted: --max-usd 0.025 ($0.0262 of $0.025)",
  );
  assert.equal(
    exhaustionReason({ scope: "turn", limit: "tokens", used: 4400, max: 2500 }),
    "budget exhausted: --max-tokens 2500 (4,400 of 2,500 tokens)",
  );
  assert.equal(
    exhaustionReason({ scope: "scenario", limit: "turns", used: 2, max: 2 }),
    "budget exhausted: the scenario's --max-turns 2 (2 of 2 model calls)",
  );
});

Deno.test("BudgetLedger with a limit of 0 refuses the first call, and with none refuses nothing", () => {
  assert.notEqual(BudgetLedger.of({ maxTurns: 0 }).refusal(), null);
  const free = BudgetLedger.of({});
  assert.equal(free.limited, false);
  for (let i = 0; i < 5; i++) assert.deepEqual(free.startCall(), []);
  assert.equal(free.refusal(), null);
});
