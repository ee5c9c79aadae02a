// The zod schemas of the settings and of the config file: the one definition of their shapes.
// The command line does not load zod to check them — lib/core/config_checks.gen.ts is generated from
// these (deno task gen) and held to them by tests/scripts/schema_codegen_test.ts.
import { z } from "zod";

export const DriverSettings = z.object({
  program: z.string().min(1).optional(),
  args: z.array(z.string()).default([]),
  idleTimeoutSeconds: z.number().positive().optional(),
  /** The model the harness is told to use (its own flag); also what a cost estimate prices. */
  model: z.string().min(1).optional(),
}).strict();

export const ModelPrice = z.object({
  inputPerMillion: z.number().nonnegative(),
  cachedInputPerMillion: z.number().nonnegative().optional(),
  outputPerMillion: z.number().nonnegative(),
}).strict();

/**
 * OpenTelemetry export (docs/otel.md). The OTEL_EXPORTER_OTLP_* variables win over these; an
 * endpoint here (or in the environment) also exports every run when it settles.
 */
/** The snapshot of the working directory taken as each run starts (lib/snapshot/). */
export const SnapshotSettings = z.object({
  /** A tree whose files add up to more is not snapshotted (0: no snapshots); 64 MiB. */
  maxBytes: z.number().int().nonnegative().default(64 * 1024 * 1024),
  /** A tree with more paths is not snapshotted. */
  maxEntries: z.number().int().positive().default(100_000),
}).strict();

export const OtelSettings = z.object({
  /** Base URL: traces go to `<endpoint>/v1/traces`, as with OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: z.string().min(1).optional(),
  /** The traces URL used as it is, as with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  tracesEndpoint: z.string().min(1).optional(),
  headers: z.record(z.string(), z.string()).optional(),
  serviceName: z.string().min(1).optional(),
  /** Export prompts, answers, tool arguments and results too (never by default). */
  content: z.boolean().optional(),
  /** Export each run when it settles, when an endpoint is set (default true). */
  exportOnSettle: z.boolean().optional(),
}).strict();

/** The model gateway (docs/gateway.md): on for the harness drivers unless this says otherwise. */
export const GatewaySettings = z.object({
  enabled: z.boolean().default(true),
}).strict();

/**
 * Confining agents under bubblewrap (docs/confinement.md) — not reins's own sandbox: `enabled`
 * as --confine for every turn, `allowHosts` as --allow-host, `hide` more paths kept from agents.
 */
export const ConfineSettings = z.object({
  enabled: z.boolean().default(false),
  allowHosts: z.array(z.string().min(1)).default([]),
  hide: z.array(z.string().min(1)).default([]),
}).strict();

/** The config file, `$REINS_HOME/config.json` or `$REINS_CONFIG`. Every key is optional. */
export const ConfigFile = z.object({
  drivers: z.object({
    claude: DriverSettings.optional(),
    codex: DriverSettings.optional(),
    gemini: DriverSettings.optional(),
    opencode: DriverSettings.optional(),
  }).strict().default({}),
  prices: z.record(z.string(), ModelPrice).default({}),
  otel: OtelSettings.default({}),
  snapshot: SnapshotSettings.default({ maxBytes: 64 * 1024 * 1024, maxEntries: 100_000 }),
  gateway: GatewaySettings.default({ enabled: true }),
  confine: ConfineSettings.default({ enabled: false, allowHosts: [], hide: [] }),
}).strict();
export type ConfigFile = z.infer<typeof ConfigFile>;

const HttpUrl = z.url({ protocol: /^https?$/ });

export const Settings = z.object({
  home: z.string().min(1),
  homeSource: z.enum(["flag", "REINS_HOME", "HOME"]),
  configPath: z.string(),
  json: z.boolean(),
  quiet: z.boolean(),
  color: z.boolean(),
  tempDir: z.string().min(1),
  platform: z.object({
    url: HttpUrl.nullable(),
    apiKey: z.string().nullable(),
    secretKey: z.string().nullable(),
    workspaceId: z.string().nullable(),
    jobId: z.string().nullable(),
    allowHttp: z.boolean(),
  }),
  openai: z.object({
    baseUrl: HttpUrl,
    apiKey: z.string().nullable(),
  }),
  /** The proxy variables, for lib/net/route.ts (fetch reads the same ones itself). */
  proxy: z.object({
    http: z.string().nullable(),
    https: z.string().nullable(),
    all: z.string().nullable(),
    noProxy: z.string().nullable(),
  }),
  drivers: z.object({
    claude: DriverSettings,
    codex: DriverSettings,
    gemini: DriverSettings,
    opencode: DriverSettings,
  }),
  prices: z.record(z.string(), ModelPrice),
  snapshot: SnapshotSettings,
  gateway: GatewaySettings,
  confine: ConfineSettings,
  /** The harness CLIs' base-URL variables that are set (lib/core/env.ts, HARNESS_UPSTREAM_VARS). */
  harnessEnv: z.record(z.string(), z.string()),
  otel: z.object({
    /** The OTEL_* variables that are set, as given: lib/otel/ reads them as the SDKs do. */
    env: z.record(z.string(), z.string()),
    file: OtelSettings,
  }),
});
export type Settings = z.infer<typeof Settings>;
