// Which request headers carry credentials: those an OpenTelemetry collector is sent
// (OTEL_EXPORTER_OTLP_HEADERS, the config file's otel.headers) become secrets of the process, so
// that an agent that prints its environment cannot write the collector's key into a run's events.
// Free of dependencies: config.ts and lib/otel both use it.

// Credentials by name (Authorization, x-api-key, Honeycomb's x-honeycomb-team, …); any other value
// is taken for one when it is long enough to be a key.
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

/**
 * The credentials in a `key=value,key=value` header list, read leniently (a malformed entry is
 * skipped here; lib/otel/target.ts says what is wrong with it).
 */
export function headerListSecrets(text: string | undefined): string[] {
  if (!text) return [];
  const headers: Record<string, string> = {};
  for (const entry of text.split(",")) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    const decode = (part: string) => {
      try {
        return decodeURIComponent(part.trim());
      } catch {
        return part.trim();
      }
    };
    headers[decode(entry.slice(0, eq))] = decode(entry.slice(eq + 1));
  }
  return headerSecrets(headers);
}
