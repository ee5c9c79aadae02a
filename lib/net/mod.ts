// The door of lib/net/: outbound HTTP (proxies, loopback routes, retries, Retry-After, a bounded
// HTTP/1 reader). Above core only. Types come through
// here, values from the module listed for them (docs/architecture.md, "Doors").
export { boundedText } from "./http1.ts";
export { outboundFetch } from "./outbound.ts";
export { isRetriableStatus, withRetry } from "./retry.ts";
export type { RetryPolicy } from "./retry.ts";
export { retryAfterMs } from "./retry_after.ts";
export { isLoopbackHost, NO_PROXY_SETTINGS } from "./route.ts";
export type { ProxySettings, Route } from "./route.ts";
