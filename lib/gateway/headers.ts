// The headers of a call through the gateway: what is passed on upstream and back (everything but
// the hop-by-hop headers of one connection), which ones carry credentials (passed on, never
// recorded: their values become secrets every sink redacts), and which of the rest are recorded.
// Also the credential a query string may carry (Gemini's `?key=`): passed on, left out of what
// is recorded.

/** Headers of one connection, never passed on (RFC 9110 §7.6.1), and those the gateway sets. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "content-length",
]);

/** Request headers that carry a credential, by name. */
const CREDENTIAL_NAMES = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "x-api-key",
  "api-key",
  "x-goog-api-key",
]);

// Any other header whose name says it holds a credential (x-amz-security-token, x-auth-token…).
const CREDENTIAL_LIKE = /(auth|token|secret|cookie|password|passwd|api-?key|credential|signature)/i;

/** Whether a header of this name carries a credential: passed on, never recorded. */
export function isCredentialHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return CREDENTIAL_NAMES.has(lower) || CREDENTIAL_LIKE.test(lower);
}

/** A cookie's value this long is taken for a credential (a session's token), a shorter one not. */
const COOKIE_SECRET_LENGTH = 16;

/**
 * The credential values of a request's headers (a bearer's token, an API key): each header's
 * whole value, the token of every `Bearer`/`Basic`/`Token` in it (at its start or not: a cookie
 * `auth=Bearer …`), and each cookie's value long enough to be a token (a cookie is one header of
 * many values, any of which a body may hold alone).
 */
export function credentialValues(headers: Headers): string[] {
  const values: string[] = [];
  for (const [name, value] of headers) {
    if (!isCredentialHeader(name)) continue;
    values.push(value);
    for (const scheme of value.matchAll(/(?:^|[\s=,;])(?:bearer|basic|token)\s+([^\s,;]+)/gi)) {
      values.push(scheme[1]);
    }
    if (name !== "cookie") continue;
    for (const cookie of value.split(";")) {
      const token = cookie.slice(cookie.indexOf("=") + 1).trim().replace(/^"(.*)"$/, "$1");
      if (token.length >= COOKIE_SECRET_LENGTH) values.push(token);
    }
  }
  return values;
}

/**
 * The request headers to send upstream: the harness's own, but the hop-by-hop ones. The body is
 * asked for uncompressed, so that what passes can be read and recorded as it is.
 */
export function upstreamHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    if (HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  out["accept-encoding"] = "identity";
  return out;
}

/**
 * The response headers to pass back: the upstream's own, but the hop-by-hop ones (and the
 * encoding and length of a body the transport already decoded).
 */
export function downstreamHeaders(headers: Headers, decoded: boolean): Headers {
  const out = new Headers();
  for (const [name, value] of headers) {
    if (HOP_BY_HOP.has(name)) continue;
    if (decoded && name === "content-encoding") continue;
    out.append(name, value);
  }
  return out;
}

/** The request headers recorded: all but credentials and the hop-by-hop ones. */
export function recordedRequestHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    if (HOP_BY_HOP.has(name) || name === "accept-encoding" || isCredentialHeader(name)) continue;
    out[name] = value;
  }
  return out;
}

// What of a response says something about the call: its type and encoding, when to retry, the
// request's id and the rate limits.
const RECORDED_RESPONSE =
  /^(content-type|content-encoding|retry-after(-ms)?|.*request-id|x-request-id|.*ratelimit.*|openai-processing-ms|openai-model|x-goog-.*)$/;

/** The response headers recorded: those that matter to a call (never a cookie). */
export function recordedResponseHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    if (name === "set-cookie" || isCredentialHeader(name)) continue;
    if (RECORDED_RESPONSE.test(name)) out[name] = value;
  }
  return out;
}

/** Query parameters that carry a credential (Gemini's `key`). */
const CREDENTIAL_PARAMS = /^(key|api[_-]?key|access[_-]?token|token|auth|signature|sig)$/i;

/** The values of the credentials a query string carries. */
export function queryCredentials(search: string): string[] {
  if (search === "" || search === "?") return [];
  const params = new URLSearchParams(search);
  return [...params].filter(([name]) => CREDENTIAL_PARAMS.test(name)).map(([, value]) => value);
}

/** A query string as recorded: without its credential parameters ("" when nothing is left). */
export function recordedQuery(search: string): string {
  if (search === "" || search === "?") return "";
  const params = new URLSearchParams(search);
  for (const name of [...params.keys()]) {
    if (CREDENTIAL_PARAMS.test(name)) params.delete(name);
  }
  const left = params.toString();
  return left === "" ? "" : `?${left}`;
}
