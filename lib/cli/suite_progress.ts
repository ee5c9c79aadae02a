// The live progress of `reins suite run` on stderr: a line as each scenario starts and ends, and
// on a terminal a dax progress bar below them with the counts and the elapsed time. Piped, the
// lines alone (no bar, no colour), so a CI log reads top to bottom.
import { importLazily } from "../core/lazy_import.ts";
import type { Output } from "./output.ts";
import type { ScenarioState } from "../suite/mod.ts";
import { tally } from "../suite/results.ts";
import { formatCost, formatDuration } from "../suite/table.ts";

export interface SuiteProgress {
  started(state: ScenarioState): void;
  ended(state: ScenarioState): void;
  retrying(state: ScenarioState, reason: string): void;
  note(text: string): void;
  finish(): void;
}

function endLine(state: ScenarioState): string {
  const { met, of, firstFailing } = tally(state.checks);
  const parts: string[] = [];
  if (state.status === "passed" || state.status === "failed") parts.push(`${met}/${of} checks`);
  if (state.turns) parts.push(`${state.turns} turn${state.turns === 1 ? "" : "s"}`);
  if (state.costUsd !== null) parts.push(formatCost(state.costUsd));
  if (state.durationMs !== null) parts.push(formatDuration(state.durationMs));
  const why = state.status === "failed" && firstFailing
    ? ` — ${firstFailing.name}: ${firstFailing.detail}`
    : (state.status === "error" || state.status === "skipped") && state.reason
    ? ` — ${state.reason}`
    : "";
  return `${state.status.padEnd(7)} ${state.instance.id}${
    parts.length ? ` (${parts.join(", ")})` : ""
  }${why}`;
}

/** Progress for `total` scenarios; quiet and --json modes print no lines. */
export async function startSuiteProgress(
  io: Output,
  total: number,
  options: { label: string; quiet: boolean },
): Promise<SuiteProgress> {
  const counts = { passed: 0, failed: 0, error: 0, skipped: 0, running: 0 };
  const startedMs = Date.now();
  const width = String(total).length;
  let done = 0;
  const counter = () => `[${String(done).padStart(width)}/${total}]`;
  if (options.quiet) {
    return { started() {}, ended() {}, retrying() {}, note() {}, finish() {} };
  }
  const count = (state: ScenarioState) => {
    done++;
    if (state.status in counts) counts[state.status as keyof typeof counts]++;
  };
  if (!io.stderrIsTerminal) {
    return {
      started(state) {
        counts.running++;
        io.note(`${counter()} start   ${state.instance.id}`);
      },
      ended(state) {
        if (state.status !== "skipped") counts.running--;
        count(state);
        io.note(`${counter()} ${endLine(state)}`);
      },
      retrying(state, reason) {
        io.note(`${counter()} retry   ${state.instance.id}: ${reason}`);
      },
      note: (text) => io.note(text),
      finish() {},
    };
  }
  // Loaded only when a bar is shown (see lib/core/lazy_import.ts).
  const { default: $ } = await importLazily<typeof import("dax")>("dax");
  const bar = $.progress({ prefix: options.label, length: total });
  const render = () => {
    const seconds = Math.round((Date.now() - startedMs) / 1000);
    bar.position(done).message(
      `${counts.passed} passed · ${counts.failed} failed · ${counts.error} errors · ${counts.running} running · ${
        formatDuration(seconds * 1000)
      }`,
    );
  };
  render();
  const ticker = setInterval(render, 1000);
  return {
    started(state) {
      counts.running++;
      $.logLight(`${counter()} start   ${state.instance.id}`);
      render();
    },
    ended(state) {
      if (state.status !== "skipped") counts.running--;
      count(state);
      $.log(`${counter()} ${endLine(state)}`);
      render();
    },
    retrying(state, reason) {
      $.logWarn("retry", `${state.instance.id}: ${reason}`);
    },
    note: (text) => $.log(text),
    finish() {
      clearInterval(ticker);
      bar.finish();
    },
  };
}
