// `--allow-host HOST[:PORT]`: a host a confined agent may reach through reins's proxy. Without a
// port any port of the host is allowed. Hosts compare case-insensitively and exactly: no
// wildcards, so an allowed `example.com` lets no subdomain through.
import { describeError, UsageError } from "../core/errors.ts";

export interface AllowedHost {
  host: string;
  /** null: any port. */
  port: number | null;
}

/** Parses one `--allow-host` value; a RangeError says what is wrong with it. */
export function parseAllowedHost(text: string): AllowedHost {
  const value = text.trim();
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(value);
  const plain = /^([A-Za-z0-9.-]+)(?::(\d+))?$/.exec(value);
  const match = bracketed ?? plain;
  if (match === null || match[1] === "") {
    throw new RangeError(
      `Cannot allow host ${JSON.stringify(text)}: expected HOST or HOST:PORT (example.com:443)`,
    );
  }
  const port = match[2] === undefined ? null : Number(match[2]);
  if (port !== null && (port < 1 || port > 65535)) {
    throw new RangeError(`Cannot allow host ${JSON.stringify(text)}: port ${port} is not 1-65535`);
  }
  return { host: match[1].toLowerCase(), port };
}

/** Whether `host:port` is one of `allowed`. */
export function isAllowed(allowed: readonly AllowedHost[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return allowed.some((entry) =>
    entry.host === name && (entry.port === null || entry.port === port)
  );
}

/**
 * The hosts a confined agent may reach: the config's `confine.allowHosts` and those `given` (by
 * --allow-host, or a suite file's scenario). A bad one is a UsageError said where it was set: the
 * config file and its key, or `givenHint`.
 */
export function allowedHosts(
  config: { allowHosts: readonly string[]; path: string },
  given: readonly string[],
  givenHint: string,
): AllowedHost[] {
  const parse = (text: string, fromConfig: boolean) => {
    try {
      return parseAllowedHost(text);
    } catch (error) {
      throw fromConfig
        ? new UsageError(`${config.path}: confine.allowHosts: ${describeError(error)}`, {
          hint: `fix confine.allowHosts in ${config.path}: each HOST or HOST:PORT`,
        })
        : new UsageError(describeError(error), { hint: givenHint });
    }
  };
  return [
    ...config.allowHosts.map((text) => parse(text, true)),
    ...given.map((text) => parse(text, false)),
  ];
}
