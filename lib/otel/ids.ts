// Trace and span ids derived from what was recorded, never drawn at random: exporting the same
// run twice gives the same trace, span for span, so a collector or backend that sees it twice
// keeps one. A run id that is a uuid (every run reins makes) is the trace id itself, so a trace
// can be found by pasting the run id without its dashes.
import { sha256Hex } from "../core/sha256.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// In plain TypeScript (lib/core/sha256.ts), not node:crypto: a run of a million events has a
// third of a million spans, and each node:crypto Hash holds native memory until a collection (the
// export of `deno task bench otel`'s run, in one process, peaked 32 MiB higher with it).
function digestHex(text: string, bytes: number): string {
  return sha256Hex(text).slice(0, bytes * 2);
}

/** W3C and OTLP forbid an all-zero id; a digest of zeros is not going to happen, but cheaply. */
function nonZero(hex: string): string {
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/** The trace id of a run: its uuid's 32 hex digits, else the first 16 bytes of a digest. */
export function traceIdOf(runId: string): string {
  if (UUID.test(runId)) return nonZero(runId.replaceAll("-", "").toLowerCase());
  return nonZero(digestHex(`reins.trace:${runId}`, 16));
}

/** The span id of a run's span named by `key` ("root", "tool:<call id>", …): 8 bytes. */
export function spanIdOf(runId: string, key: string): string {
  return nonZero(digestHex(`reins.span:${runId}:${key}`, 8));
}

/** The id of a run's root span, which other runs' traces link to. */
export function rootSpanIdOf(runId: string): string {
  return spanIdOf(runId, "root");
}
