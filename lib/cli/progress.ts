// The live progress line of `reins run` on a terminal: turns, tool calls, tokens and elapsed
// time, drawn by dax on stderr. Loaded only when stderr is a terminal, so piped and scripted runs
// never pay for dax.
import type { RunEvent } from "../store/contracts.ts";

export interface Progress {
  update(event: RunEvent): void;
  stop(): void;
}

export async function startProgress(runId: string): Promise<Progress> {
  const { default: $ } = await import("dax");
  const bar = $.progress({ prefix: `run ${runId.slice(0, 8)}`, message: "starting" });
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
        case "approval.requested":
          last = `waiting: reins approve ${runId.slice(0, 8)} ${event.payload.approvalId}`;
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
