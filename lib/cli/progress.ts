// The live progress line of `reins run` on a terminal: turns, tool calls, tokens and elapsed
// time, drawn by dax on stderr. Loaded only when stderr is a terminal, so piped and scripted runs
// never pay for dax.
import { importLazily } from "../core/lazy_import.ts";
import type { RunEvent } from "../store/mod.ts";

export interface Progress {
  update(event: RunEvent): void;
  stop(): void;
}

/**
 * `shortId` names the run as people should type it (a prefix unique when it is asked for); the
 * bar shows the command that answers an approval or question the run waits for.
 */
export async function startProgress(shortId: () => string): Promise<Progress> {
  // Loaded only when a bar is shown (see lib/core/lazy_import.ts).
  const { default: $ } = await importLazily<typeof import("dax")>("dax");
  const { WaitingAnnouncer } = await importLazily<typeof import("./waiting.ts")>("cli/waiting.ts");
  const waiting = new WaitingAnnouncer(shortId);
  const bar = $.progress({ prefix: `run ${shortId()}`, message: "starting" });
  const started = Date.now();
  let turns = 0;
  let tools = 0;
  let tokens = 0;
  let last = "";
  const render = () => {
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    bar.message(
      `${turns} turns · ${tools} tool calls · ${tokens} tokens · ${seconds}s${
        last ? ` · ${last}` : ""
      }`,
    );
  };
  const ticker = setInterval(render, 1000);
  return {
    update(event) {
      const waits = waiting.update(event);
      if (waits.length > 0) {
        last = `waiting: ${waiting.command(waits.at(-1)!)}`;
        render();
        return;
      }
      switch (event.type) {
        case "model.completed":
          turns++;
          last = "model answered";
          break;
        case "tool.started":
          tools++;
          last = `running ${event.payload.tool}`;
          break;
        case "usage.updated":
          tokens = (event.payload.inputTokens ?? 0) + (event.payload.outputTokens ?? 0);
          break;
        case "approval.resolved":
        case "question.answered":
          last = "answered";
          break;
        default:
          return;
      }
      render();
    },
    stop() {
      clearInterval(ticker);
      bar.finish();
    },
  };
}
