// Which way an outbound request goes: through Deno's fetch (which applies HTTP(S)_PROXY,
// ALL_PROXY and NO_PROXY from the process environment itself) or over a socket of our own
// (lib/net/http1.ts). Loopback is never proxied: a proxy cannot reach our 127.0.0.1, and a local
// platform or model server behind one answers with the proxy's error, not its own.
//
// Measured on Deno 2.9: fetch sends loopback requests to an env proxy too (NO_PROXY=* does not
// stop it, NO_PROXY=127.0.0.1 does), and no HttpClient option turns the env proxy off; the "tcp"
// transport that reaches the host directly writes absolute-form targets (`POST http://h/p`),
// which a plain Python http.server routes to 404. So loopback with a proxy in the environment
// takes our socket, which writes origin form; everything else takes fetch.

/** The proxy variables, read once by config (upper case first, then lower case). */
export interface ProxySettings {
  http: string | null;
  https: string | null;
  all: string | null;
  noProxy: string | null;
}

export const NO_PROXY_SETTINGS: ProxySettings = {
  http: null,
  https: null,
  all: null,
  noProxy: null,
};

/** Hosts that never go through a proxy: 127.0.0.0/8, ::1, localhost and *.localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return host === "localhost" || host.endsWith(".localhost") || host === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The proxy variable fetch would consider for `url`'s scheme, or null when none is set. */
export function proxyVariableFor(url: URL, proxy: ProxySettings): string | null {
  const named = url.protocol === "https:" ? proxy.https : proxy.http;
  return named || proxy.all || null;
}

/**
 * Whether a request to `url` goes through a proxy by our reading of NO_PROXY: never for
 * loopback; otherwise when a proxy is set for the scheme and no NO_PROXY entry matches the host
 * exactly or as a domain suffix (`*` matches every host). Deliberately coarse (no CIDR): it
 * decides whether a body can go straight to the host, not where fetch sends it.
 */
export function proxyApplies(url: URL, proxy: ProxySettings): boolean {
  if (isLoopbackHost(url.hostname)) return false;
  if (proxyVariableFor(url, proxy) === null) return false;
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const bypass = (proxy.noProxy ?? "").split(",").map((entry) =>
    entry.trim().toLowerCase().replace(/:\d+$/, "")
  ).filter(Boolean);
  return !bypass.some((entry) =>
    entry === "*" || host === entry.replace(/^\./, "") ||
    host.endsWith(entry.startsWith(".") ? entry : `.${entry}`)
  );
}

export type Route = "fetch" | "direct";

/**
 * The way a request to `url` goes. "direct" (our socket, origin form, Content-Length) for
 * loopback whenever the environment names a proxy fetch might apply, and for a streamed body
 * that must carry a Content-Length (fetch sends every stream chunked, and a WSGI server reads no
 * body without a length) when no proxy is in the way; "fetch" otherwise.
 */
export function routeOf(
  url: URL,
  proxy: ProxySettings,
  options: { streamedBody?: boolean } = {},
): Route {
  if (isLoopbackHost(url.hostname)) {
    return proxyVariableFor(url, proxy) === null && !options.streamedBody ? "fetch" : "direct";
  }
  return options.streamedBody && !proxyApplies(url, proxy) ? "direct" : "fetch";
}
