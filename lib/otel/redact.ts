// The redactor a trace export applies to every string it sends (request.ts calls it on the
// finished payload): the process's one choke point (lib/core/redact.ts), which knows every secret
// the settings hold, taught the collector's own credentials first.
import { redact, rememberSecrets } from "../core/redact.ts";

// Collector headers that carry credentials by name (Authorization, x-api-key, Honeycomb's
// x-honeycomb-team, …); any other header value is taken for one when it is long enough to be a key.
const CREDENTIAL_HEADER = /auth|key|token|secret|passw|team|signature|cookie|session/i;
const LONG_HEADER_VALUE = 16;

/** The values of `headers` that are credentials, without an auth scheme's name. */
export function headerSecrets(headers: Readonly<Record<string, string>>): string[] {
  return Object.entries(headers).flatMap(([name, value]) => {
    const credential = value.trim().replace(/^(Bearer|Basic|Token)\s+/i, "");
    return CREDENTIAL_HEADER.test(name) || credential.length >= LONG_HEADER_VALUE
      ? [credential]
      : [];
  });
}

/** The redactor for an export whose requests carry `headers`. */
export function exportRedactor(
  headers: Readonly<Record<string, string>>,
): (text: string) => string {
  rememberSecrets(...headerSecrets(headers));
  return redact;
}
