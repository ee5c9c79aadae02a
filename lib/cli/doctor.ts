// `reins doctor`: what reins would use and whether it can: the data root and its modes, the
// sandbox in force, the harness programs, the platform settings (never their secret values).
import type { CommandContext } from "./command.ts";
import { ensurePrivateDir } from "../core/private_files.ts";
import { HARNESS_DRIVERS, harnessProgram, type Settings } from "../core/config.ts";
import { describeError } from "../core/errors.ts";
import { VERSION } from "../core/version.ts";
import { pendingReports } from "../platform/pending.ts";

export const usage = "reins doctor";
export const description =
  "Checks the data root (creating it 0700 and tightening modes that are too wide), shows the " +
  "permissions in force, looks for the harness programs and says which platform settings are set.";
export const flags = {};

interface ProgramCheck {
  driver: string;
  program: string;
  allowed: boolean;
  found: boolean;
  version: string | null;
  error: string | null;
}

async function checkProgram(driver: string, program: string): Promise<ProgramCheck> {
  try {
    const output = await new Deno.Command(program, {
      args: ["--version"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(10_000),
    }).output();
    const version = new TextDecoder().decode(output.stdout).trim().split("\n")[0] || null;
    return { driver, program, allowed: true, found: true, version, error: null };
  } catch (error) {
    const refused = error instanceof Deno.errors.NotCapable;
    const missing = error instanceof Deno.errors.NotFound;
    return {
      driver,
      program,
      allowed: !refused,
      found: false,
      version: null,
      error: refused
        ? "not allowed by the sandbox"
        : missing
        ? "not found on PATH"
        : describeError(error),
    };
  }
}

function modeOf(path: string): string | null {
  try {
    const mode = Deno.statSync(path).mode;
    return mode === null ? null : (mode & 0o777).toString(8).padStart(4, "0");
  } catch {
    return null;
  }
}

/** The OpenTelemetry export: where traces go, whether runs export themselves, what waits. */
async function otelReport(
  settings: Settings,
  dataRootUsable: boolean,
  query: (descriptor: Deno.PermissionDescriptor) => string,
) {
  const { exportSettings } = await import("../otel/target.ts");
  const { waitingExports } = await import("../otel/outbox.ts");
  const exporting = exportSettings(settings.otel);
  const target = exporting.target;
  const waiting = dataRootUsable ? waitingExports(settings.home) : null;
  return {
    endpoint: target?.url ?? null,
    source: target?.source ?? null,
    exportOnSettle: exporting.onSettle,
    content: exporting.content,
    serviceName: exporting.serviceName,
    collectorHost: target ? query({ name: "net", host: new URL(target.url).host }) : null,
    problems: [...exporting.warnings, ...(exporting.unusable ? [exporting.unusable] : [])],
    pendingExports: waiting?.pending.length ?? null,
    refusedExports: waiting?.refused.length ?? null,
    unreadableExports: waiting?.unreadable ?? [],
  };
}

function otelLines(otel: Awaited<ReturnType<typeof otelReport>>): string[] {
  const lines = [
    otel.endpoint === null
      ? "otel         no endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): runs are exported only by reins export otel"
      : `otel         ${otel.endpoint} (from ${otel.source}); on settle: ${
        otel.exportOnSettle ? "yes" : "no"
      }; content: ${otel.content ? "yes" : "no"}; sandbox net: ${otel.collectorHost}`,
    ...otel.problems.map((problem) => `             ${problem}`),
  ];
  if (otel.pendingExports) {
    lines.push(
      `outbox       ${otel.pendingExports} trace export(s) pending: reins export otel --pending sends them`,
    );
  }
  if (otel.refusedExports) {
    lines.push(
      `outbox       ${otel.refusedExports} trace export(s) refused by the collector (outbox/otlp/)`,
    );
  }
  lines.push(...otel.unreadableExports.map((line) => `outbox       unreadable: ${line}`));
  return lines;
}

export async function run(ctx: CommandContext): Promise<number> {
  const settings = await ctx.settings();
  const existed = modeOf(settings.home) !== null;
  let tightened: string[] = [];
  let rootError: string | null = null;
  try {
    tightened = ensurePrivateDir(settings.home, settings.home);
    for (const sub of ["runs", "contexts"]) {
      tightened.push(...ensurePrivateDir(settings.home, `${settings.home}/${sub}`));
    }
  } catch (error) {
    rootError = describeError(error);
  }
  const query = (descriptor: Deno.PermissionDescriptor) =>
    Deno.permissions.querySync(descriptor).state === "granted" ? "granted" : "denied";
  const permissions = {
    readDataRoot: query({ name: "read", path: settings.home }),
    writeDataRoot: query({ name: "write", path: settings.home }),
    readAnywhere: query({ name: "read" }),
    netAnywhere: query({ name: "net" }),
    runAnything: query({ name: "run" }),
    envAll: query({ name: "env" }),
    platformHost: settings.platform.url
      ? query({ name: "net", host: new URL(settings.platform.url).host })
      : null,
  };
  const programs = await Promise.all(
    HARNESS_DRIVERS.map((driver) => checkProgram(driver, harnessProgram(settings, driver))),
  );
  const outbox = rootError ? null : pendingReports(settings.home);
  const otel = await otelReport(settings, rootError === null, query);
  const report = {
    version: VERSION,
    deno: Deno.version.deno,
    dataRoot: {
      path: settings.home,
      source: settings.homeSource,
      existed,
      mode: modeOf(settings.home),
      tightened,
      error: rootError,
    },
    config: { path: settings.configPath, exists: modeOf(settings.configPath) !== null },
    permissions,
    programs,
    platform: {
      url: settings.platform.url,
      apiKeySet: settings.platform.apiKey !== null,
      secretKeySet: settings.platform.secretKey !== null,
      workspaceId: settings.platform.workspaceId,
      jobId: settings.platform.jobId,
      pendingReports: outbox?.pending.length ?? null,
      refusedReports: outbox?.refused.length ?? null,
      unreadableReports: outbox?.unreadable ?? [],
    },
    otel,
  };
  if (ctx.io.jsonMode) {
    ctx.io.json(report);
    return rootError ? 6 : 0;
  }
  const yes = (value: boolean) => value ? "yes" : "no";
  const lines = [
    `reins ${VERSION} on Deno ${Deno.version.deno}`,
    `data root    ${settings.home} (from ${settings.homeSource}; ${
      existed ? "existed" : "created"
    }, mode ${report.dataRoot.mode ?? "?"})`,
    ...tightened.map((path) => `             tightened to 0700: ${path}`),
    ...(rootError ? [`             unusable: ${rootError}`] : []),
    `config       ${settings.configPath} (${report.config.exists ? "present" : "absent"})`,
    `sandbox      read data root: ${permissions.readDataRoot}, read anywhere: ${permissions.readAnywhere}, ` +
    `net anywhere: ${permissions.netAnywhere}, run anything: ${permissions.runAnything}, all env: ${permissions.envAll}`,
    ...programs.map((p) =>
      `harness      ${p.driver.padEnd(9)}${p.program}: ${
        p.found ? `found${p.version ? ` (${p.version})` : ""}` : p.error
      }`
    ),
    `platform     ${settings.platform.url ?? "not set (HARNESS_PLATFORM_URL)"}; api key set: ${
      yes(report.platform.apiKeySet)
    }; secret key set: ${yes(report.platform.secretKeySet)}`,
    ...(outbox && outbox.pending.length
      ? [
        `outbox       ${outbox.pending.length} report(s) pending: reins report --pending sends them`,
      ]
      : []),
    ...(outbox?.pending ?? []).map((r) =>
      `             ${r.id}${r.name ? ` (${r.name})` : ""}: ${r.reason ?? "not sent yet"}`
    ),
    ...(outbox && outbox.refused.length
      ? [`outbox       ${outbox.refused.length} report(s) refused by the platform (see outbox/)`]
      : []),
    ...(outbox?.unreadable ?? []).map((line) => `outbox       unreadable: ${line}`),
    ...otelLines(otel),
  ];
  ctx.io.print(lines.join("\n"));
  return rootError ? 6 : 0;
}
