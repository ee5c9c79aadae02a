// What a turn does with the model gateway and its budget: whether its harness's model calls go
// through the gateway (on for the four harness drivers, unless --no-gateway, the config file or a
// harness whose upstream reins cannot tell says otherwise — the reason is recorded on
// run.started), the budget ledger of the turn and of its context or scenario, and the binding of
// the turn to the gateway once its run exists.
import type { Settings } from "../core/mod.ts";
import {
  BudgetLedger,
  type BudgetScope,
  type Exhaustion,
  type Limits,
  type Spent,
} from "../core/budget.ts";
import { describeError, UsageError } from "../core/errors.ts";
import { importLazily } from "../core/lazy_import.ts";
import type { Driver, GatewayRoute, ModelRoutePlan } from "../drivers/mod.ts";
import type { EventInput, GatewayUse, RunEvent, Store } from "../store/mod.ts";
import type { TurnRequest } from "./types.ts";
import type { GatewayBinding, UpstreamTrouble } from "../gateway/mod.ts";

/** The gateway decided for a turn: a plan of routes, or why not (null: a driver without one). */
export type GatewayDecision =
  | { use: GatewayUse & { enabled: true }; plan: ModelRoutePlan }
  | { use: GatewayUse & { enabled: false }; plan: null }
  | null;

/** Whether the turn's model calls go through the gateway, and by which routes. */
export async function decideGateway(
  settings: Settings,
  request: TurnRequest,
  driver: Driver,
): Promise<GatewayDecision> {
  if (driver.modelRoutes === undefined) return null;
  const off = (reason: string): GatewayDecision => {
    if (request.upstreamOf !== undefined) {
      // A replay without the gateway would call the model for real.
      throw new UsageError(`Cannot answer from a recording without the model gateway: ${reason}`);
    }
    return { use: { enabled: false, reason }, plan: null };
  };
  if (request.gateway === false) return off(request.noGatewayReason ?? "--no-gateway");
  if (!settings.gateway.enabled && request.upstreamOf === undefined) {
    return off(`gateway.enabled is false in the config file (${settings.configPath})`);
  }
  let routes;
  try {
    routes = await driver.modelRoutes({
      agent: request.agent,
      settings,
      env: request.env ?? {},
      cwd: request.cwd,
    });
  } catch (error) {
    return off(
      `reins could not tell where ${driver.name}'s model calls go: ${describeError(error)}`,
    );
  }
  if ("unavailable" in routes) return off(routes.unavailable);
  const upstreamOf = request.upstreamOf;
  if (upstreamOf !== undefined) {
    // A replay or a reuse: every route, and its header's alternative, goes to the recording.
    routes = {
      ...routes,
      routes: Object.fromEntries(
        Object.entries(routes.routes).map(([route, target]) => [route, {
          ...target,
          upstream: upstreamOf(route, target.upstream),
          ...(target.whenHeader
            ? {
              whenHeader: {
                ...target.whenHeader,
                upstream: upstreamOf(route, target.whenHeader.upstream),
              },
            }
            : {}),
        }]),
      ),
    };
  }
  return { use: { enabled: true }, plan: routes };
}

/** What a scope's runs spent: model calls, input + output tokens, dollars (from their events). */
export function spentIn(events: readonly RunEvent[]): Spent {
  const spent = { calls: 0, tokens: 0, usd: 0 };
  const byRun = new Map<string, { gateway: Spent; loop: Spent; usage: Spent | null }>();
  for (const event of events) {
    if (event.ignored !== undefined) continue;
    let run = byRun.get(event.runId);
    if (run === undefined) {
      run = {
        gateway: { calls: 0, tokens: 0, usd: 0 },
        loop: { calls: 0, tokens: 0, usd: 0 },
        usage: null,
      };
      byRun.set(event.runId, run);
    }
    if (event.type === "model.call.completed") {
      const usage = event.payload.usage;
      run.gateway.tokens += (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
      run.gateway.usd += usage?.costUsd ?? 0;
    } else if (event.type === "model.call.started" && event.payload.generates) {
      run.gateway.calls += 1;
    } else if (event.type === "model.completed") {
      run.loop.calls += 1;
    } else if (event.type === "usage.updated") {
      const p = event.payload;
      run.usage = {
        calls: p.requests ?? 0,
        tokens: (p.inputTokens ?? 0) + (p.outputTokens ?? 0),
        usd: p.costUsd ?? 0,
      };
    }
  }
  for (const run of byRun.values()) {
    // The wire's account first, then the loop's own, then what the harness reported.
    const counted = run.gateway.calls > 0 ? run.gateway : run.usage ?? run.loop;
    spent.calls += Math.max(counted.calls, run.loop.calls);
    spent.tokens += counted.tokens;
    spent.usd += run.gateway.calls > 0 && run.gateway.usd === 0 ? run.usage?.usd ?? 0 : counted.usd;
  }
  spent.usd = Math.round(spent.usd * 1e8) / 1e8;
  return spent;
}

/** The turn's ledger: its own limits, its context's (over the context's runs) and any given. */
export function turnLedger(
  store: Store,
  request: TurnRequest,
  contextSessions: string[],
): BudgetLedger {
  const scopes: BudgetScope[] = [{ scope: "turn", limits: request.budget }];
  if (request.contextBudget && hasLimit(request.contextBudget) && contextSessions.length > 0) {
    scopes.push({
      scope: "context",
      limits: request.contextBudget,
      spentBefore: spentIn(store.conversationEvents(contextSessions)),
    });
  } else if (request.contextBudget && hasLimit(request.contextBudget)) {
    scopes.push({ scope: "context", limits: request.contextBudget });
  }
  scopes.push(...(request.budgetScopes ?? []));
  return new BudgetLedger(scopes);
}

function hasLimit(limits: Limits): boolean {
  return limits.maxTurns !== undefined || limits.maxTokens !== undefined ||
    limits.maxUsd !== undefined;
}

/** How long a harness refused for its budget may take to stop by itself before reins stops it. */
export const BUDGET_STOP_GRACE_MS = 10_000;

export interface TurnGateway {
  route: GatewayRoute;
  binding: GatewayBinding;
}

/** Binds the turn to the gateway (started if need be); its calls are recorded through `emit`. */
export async function bindGateway(
  store: Store,
  settings: Settings,
  plan: ModelRoutePlan,
  parts: {
    runId: string;
    ledger: BudgetLedger;
    emit(event: EventInput): void;
    onExhausted(exhaustion: Exhaustion): void;
    onTrouble(trouble: UpstreamTrouble): void;
    warn(message: string): void;
  },
): Promise<TurnGateway> {
  const gateway = await importLazily<typeof import("../gateway/mod.ts")>("gateway/mod.ts");
  const { priceOfModel } = await importLazily<typeof import("../drivers/prices.ts")>(
    "drivers/prices.ts",
  );
  const binding = await gateway.bindTurn({
    root: store,
    runId: parts.runId,
    routes: plan.routes,
    emit: parts.emit,
    ledger: parts.ledger,
    priceOf: (model) => priceOfModel(model, settings.prices),
    proxy: settings.proxy,
    onExhausted: parts.onExhausted,
    onTrouble: parts.onTrouble,
    warn: parts.warn,
  });
  return { route: { baseUrl: binding.baseUrl, plan }, binding };
}
