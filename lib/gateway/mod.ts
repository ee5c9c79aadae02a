// The model gateway (docs/gateway.md): a loopback HTTP server every harness CLI is pointed at,
// passing each model call on to the upstream the CLI would have used, streaming the answer back
// as it comes, recording the call at the wire as the run's events, and refusing a call once the
// turn's budget is reached. The turn engine binds a turn to it and hands the harness driver its
// base URL; drivers never import it. Below the turn engine; above the store and lib/net.
export { bindTurn } from "./server.ts";
export {
  type BindOptions,
  costOf,
  type GatewayBinding,
  type Price,
  type RouteTarget,
  type UpstreamTrouble,
} from "./binding.ts";
export { generates, type Wire, wireOf, WIRES } from "./wires.ts";

// What the other rooms use besides:
export type { ReplayPaths } from "./replay_rules.ts";
export type { CallDivergence, RecordedCall, ReplayServer } from "./replay_server.ts";
