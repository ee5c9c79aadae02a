// Where traces go and how, from the OTEL_* variables as the OpenTelemetry SDK specification
// defines them (specification/protocol/exporter.md, configuration/sdk-environment-variables.md),
// then the config file's `otel` section, then `--endpoint`. Pure: settings in, a target or the
// list of what is wrong out, so `reins export otel` can refuse and a settling run can warn.
import type { Settings } from "../core/mod.ts";

export type OtelSettings = Settings["otel"];

export const DEFAULT_ENDPOINT = "http://localhost:4318";
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_SERVICE_NAME = "reins";

export interface OtlpTarget {
  /** The URL spans are POSTed to. */
  url: string;
  /** Where the URL came from, for messages: `OTEL_EXPORTER_OTLP_ENDPOINT`, `--endpoint`… */
  source: string;
  /** Request headers (OTEL_EXPORTER_OTLP_HEADERS): credentials often; never written anywhere. */
  headers: Record<string, string>;
  /** Per request; null for no limit (a timeout of 0). */
  timeoutMs: number | null;
  compression: "gzip" | null;
}

export interface ExportSettings {
  /** Null when no endpoint is configured (then only an explicit export goes to the default). */
  target: OtlpTarget | null;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  content: boolean;
  /** Whether a settling run exports itself: an endpoint is configured and nothing turned it off. */
  onSettle: boolean;
  valueLengthLimit: number | null;
  /** Values that could not be used, each one line; they were ignored, as the SDKs do. */
  warnings: string[];
  /** Why nothing can be sent with these settings at all (OTLP/gRPC asked for), or null. */
  unusable: string | null;
}

/**
 * A `key1=value1,key2=value2` list (W3C Baggage's form, which OTEL_EXPORTER_OTLP_HEADERS and
 * OTEL_RESOURCE_ATTRIBUTES use), values percent-decoded. Throws on a malformed entry, for the
 * caller to drop the whole variable, as the specification asks.
 */
export function parseKeyValueList(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new SyntaxError(`'${entry}' is not key=value`);
    const key = decodeURIComponent(entry.slice(0, eq).trim());
    const value = decodeURIComponent(entry.slice(eq + 1).trim());
    if (key === "") throw new SyntaxError(`'${entry}' has an empty key`);
    out[key] = value;
  }
  return out;
}

function httpUrl(text: string): URL | null {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url : null;
  } catch {
    return null;
  }
}

/** A base endpoint with the traces path appended, as for OTEL_EXPORTER_OTLP_ENDPOINT. */
export function tracesUrlOf(base: URL): string {
  const url = new URL(base.href);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`;
  return url.href;
}

/** `--endpoint`: a base URL like OTEL_EXPORTER_OTLP_ENDPOINT, or a full `…/v1/traces` URL. */
export function flagUrlOf(base: URL): string {
  return /\/v1\/traces\/?$/.test(base.pathname) ? base.href : tracesUrlOf(base);
}

function timeoutOf(text: string | undefined, name: string, warnings: string[]): number | null {
  if (text === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = Number(text.trim());
  if (!Number.isInteger(ms) || ms < 0) {
    warnings.push(`${name}=${JSON.stringify(text)} is not a whole number of milliseconds`);
    return DEFAULT_TIMEOUT_MS;
  }
  return ms === 0 ? null : ms;
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && value.trim().toLowerCase() === "true";
}

/**
 * Whether an endpoint is configured at all: the cheap test a settling run makes before it loads
 * the export (the full reading, with its warnings, is exportSettings()).
 */
export function endpointConfigured(otel: OtelSettings): boolean {
  const env = otel.env;
  return Boolean(
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT ||
      otel.file.tracesEndpoint || otel.file.endpoint,
  );
}

/** The export settings; `endpointFlag` is `--endpoint`, which wins over everything. */
export function exportSettings(
  otel: OtelSettings,
  flags: { endpoint?: string; content?: boolean } = {},
): ExportSettings {
  const env = otel.env;
  const file = otel.file;
  const warnings: string[] = [];

  let target: OtlpTarget | null = null;
  const candidates: [string, string | undefined, (url: URL) => string][] = [
    ["--endpoint", flags.endpoint, flagUrlOf],
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, (u) => u.href],
    ["OTEL_EXPORTER_OTLP_ENDPOINT", env.OTEL_EXPORTER_OTLP_ENDPOINT, tracesUrlOf],
    ["otel.tracesEndpoint in the config file", file.tracesEndpoint, (u) => u.href],
    ["otel.endpoint in the config file", file.endpoint, tracesUrlOf],
  ];
  let source: string | null = null;
  let url: string | null = null;
  for (const [name, value, resolve] of candidates) {
    if (value === undefined || value.trim() === "") continue;
    const parsed = httpUrl(value.trim());
    if (parsed === null) {
      warnings.push(`${name}=${JSON.stringify(value)} is not an http:// or https:// URL`);
      continue;
    }
    source = name;
    url = resolve(parsed);
    break;
  }

  let headers: Record<string, string> = { ...file.headers };
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"]) {
    const value = env[name];
    if (value === undefined) continue;
    try {
      headers = parseKeyValueList(value);
    } catch (error) {
      warnings.push(`${name} was ignored: ${(error as Error).message}`);
      continue;
    }
    break;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\0]/.test(value)) {
      warnings.push(`the header ${JSON.stringify(name)} cannot be sent and was left out`);
      delete headers[name];
    }
  }

  const timeoutName = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT !== undefined
    ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
    : "OTEL_EXPORTER_OTLP_TIMEOUT";
  const timeoutMs = timeoutOf(env[timeoutName], timeoutName, warnings);

  const compressionName = env.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION !== undefined
    ? "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"
    : "OTEL_EXPORTER_OTLP_COMPRESSION";
  const compressionValue = env[compressionName]?.trim().toLowerCase();
  let compression: "gzip" | null = null;
  if (compressionValue === "gzip") compression = "gzip";
  else if (compressionValue !== undefined && compressionValue !== "none") {
    warnings.push(`${compressionName}=${JSON.stringify(compressionValue)} is not gzip or none`);
  }

  const protocolName = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL !== undefined
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = env[protocolName]?.trim();
  // reins sends http/json; collectors take it beside http/protobuf on the same port. gRPC is
  // another port and another wire: sending JSON there would only fail later and less clearly.
  let unusable: string | null = null;
  if (protocol === "grpc") {
    unusable = `${protocolName}=grpc, and reins sends OTLP/HTTP with JSON: set it to ` +
      `http/json and point the endpoint at the collector's HTTP port (4318)`;
  } else if (protocol !== undefined && protocol !== "http/json" && protocol !== "http/protobuf") {
    warnings.push(
      `${protocolName}=${JSON.stringify(protocol)} is not grpc, http/protobuf or http/json`,
    );
  }

  if (url !== null) target = { url, source: source!, headers, timeoutMs, compression };

  let resourceAttributes: Record<string, string> = {};
  if (env.OTEL_RESOURCE_ATTRIBUTES !== undefined) {
    try {
      resourceAttributes = parseKeyValueList(env.OTEL_RESOURCE_ATTRIBUTES);
    } catch (error) {
      warnings.push(`OTEL_RESOURCE_ATTRIBUTES was ignored: ${(error as Error).message}`);
    }
  }
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resourceAttributes["service.name"] ||
    file.serviceName || DEFAULT_SERVICE_NAME;

  const limitName = env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT !== undefined
    ? "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"
    : "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT";
  let valueLengthLimit: number | null = null;
  if (env[limitName] !== undefined) {
    const limit = Number(env[limitName]!.trim());
    if (Number.isInteger(limit) && limit >= 0) valueLengthLimit = limit;
    else warnings.push(`${limitName}=${JSON.stringify(env[limitName])} is not a whole number`);
  }

  const content = flags.content === true || file.content === true ||
    truthy(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT);
  const onSettle = flags.endpoint === undefined && target !== null && unusable === null &&
    file.exportOnSettle !== false && !truthy(env.OTEL_SDK_DISABLED);
  return {
    target,
    serviceName,
    resourceAttributes,
    content,
    onSettle,
    valueLengthLimit,
    warnings,
    unusable,
  };
}

/**
 * The target of an explicit export: the configured one, else the specification's default. Null
 * when the settings cannot be used (`unusable` says why).
 */
export function explicitTarget(settings: ExportSettings): OtlpTarget | null {
  if (settings.unusable !== null) return null;
  return settings.target ?? {
    url: tracesUrlOf(new URL(DEFAULT_ENDPOINT)),
    source: "the default endpoint",
    headers: {},
    timeoutMs: DEFAULT_TIMEOUT_MS,
    compression: null,
  };
}
