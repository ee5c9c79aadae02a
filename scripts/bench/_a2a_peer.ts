// The peer `deno task bench serve` holds `reins serve` to: an A2A server built the usual way,
// @a2a-js/sdk's DefaultRequestHandler behind its Express JSON-RPC handler, whose executor does
// for each task what a reins turn does at the least — spawns the same program and waits for it,
// and appends the task to a journal and fdatasyncs it before answering, so that an answered task
// survives a crash. Its first stdout line is its URL. `deno run … _a2a_peer.ts JOURNAL PROGRAM`.
import express from "express";
import { spawn } from "node:child_process";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import type { AgentExecutor } from "@a2a-js/sdk/server";
import { jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { type AgentCard, TaskState } from "@a2a-js/sdk";

const [journalPath, program] = Deno.args;
const journal = await Deno.open(journalPath, { create: true, append: true });
const encoder = new TextEncoder();

/** Runs `program` to its end, as an executor starting an agent CLI does. */
function run(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, [], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.resume();
    child.stderr.resume();
    child.on("error", reject);
    child.on("close", (code) => resolve(code ?? -1));
  });
}

const executor: AgentExecutor = {
  async execute(context, bus) {
    const code = await run();
    const state = code === 0 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_FAILED;
    const line = JSON.stringify({ task: context.taskId, context: context.contextId, code });
    await journal.write(encoder.encode(`${line}\n`));
    await journal.syncData();
    bus.publish(AgentEvent.task(
      {
        id: context.taskId,
        contextId: context.contextId,
        status: { state, timestamp: new Date().toISOString() },
        history: [context.userMessage],
        artifacts: [],
        metadata: {},
      } as unknown as Parameters<typeof AgentEvent.task>[0],
    ));
    bus.finished();
  },
  cancelTask() {
    return Promise.resolve();
  },
};

const card = {
  name: "bench peer",
  description: "spawns a program and journals each task",
  version: "1.0.0",
  supportedInterfaces: [
    { url: "http://127.0.0.1/", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
  ],
  capabilities: { streaming: false },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [],
} as unknown as AgentCard;

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
app.use(
  "/",
  jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
);
const server = app.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.log(`http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/`);
});
Deno.addSignalListener("SIGTERM", () => {
  server.close();
  journal.close();
  Deno.exit(0);
});
