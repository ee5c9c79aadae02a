// Where a command's words go: results on stdout (only JSON with --json), messages for people on
// stderr. Writes are synchronous so that output and exit codes never race. Everything written
// passes through the secrets choke point (lib/core/redact.ts).
import { redact, redactValue } from "../core/redact.ts";

const encoder = new TextEncoder();

/** Texts up to this many UTF-16 units are encoded into one buffer kept for the next write. */
const REUSED_UNITS = 1 << 19;
let scratch = new Uint8Array(0);

function writeAllSync(target: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes: Uint8Array;
  if (text.length <= REUSED_UNITS) {
    // A UTF-16 unit takes at most three bytes of UTF-8. One buffer for every write: a long
    // transcript is written a few hundred kilobytes at a time (`deno task bench views`).
    if (scratch.length < text.length * 3) scratch = new Uint8Array(Math.max(text.length * 3, 4096));
    bytes = scratch.subarray(0, encoder.encodeInto(text, scratch).written);
  } else {
    bytes = encoder.encode(text);
  }
  let written = 0;
  while (written < bytes.length) written += target.writeSync(bytes.subarray(written));
}

export interface Output {
  /** A line (or lines) of the command's result on stdout. Not used with --json. */
  print(text: string): void;
  /** One JSON value on stdout, as one line. */
  json(value: unknown): void;
  /** A message for people on stderr. */
  note(text: string): void;
  /** A warning on stderr: `reins: warning: …`. Shown even with --quiet. */
  warn(text: string): void;
  readonly jsonMode: boolean;
  readonly quiet: boolean;
  readonly color: boolean;
  readonly stdoutIsTerminal: boolean;
  readonly stderrIsTerminal: boolean;
}

export function terminalOutput(
  options: { json: boolean; quiet: boolean; noColor: boolean },
): Output {
  const stdoutIsTerminal = Deno.stdout.isTerminal();
  const stderrIsTerminal = Deno.stderr.isTerminal();
  return {
    print: (text) => writeAllSync(Deno.stdout, redact(text.endsWith("\n") ? text : `${text}\n`)),
    json: (value) => writeAllSync(Deno.stdout, `${JSON.stringify(redactValue(value))}\n`),
    note: (text) => {
      if (options.quiet) return;
      writeAllSync(Deno.stderr, redact(text.endsWith("\n") ? text : `${text}\n`));
    },
    warn: (text) => writeAllSync(Deno.stderr, redact(`reins: warning: ${text}\n`)),
    jsonMode: options.json,
    quiet: options.quiet,
    color: stdoutIsTerminal && !options.noColor,
    stdoutIsTerminal,
    stderrIsTerminal,
  };
}

/** An Output that collects into arrays: for tests of formatting code. */
export function memoryOutput(json = false): Output & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    print: (text) => out.push(text),
    json: (value) => out.push(JSON.stringify(value)),
    note: (text) => err.push(text),
    warn: (text) => err.push(`reins: warning: ${text}`),
    jsonMode: json,
    quiet: false,
    color: false,
    stdoutIsTerminal: false,
    stderrIsTerminal: false,
  };
}
