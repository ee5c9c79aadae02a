// `reins serve --driver claude|codex` under the binary's sandbox, driven by the official A2A
// client (@a2a-js/sdk): a two-turn conversation on one contextId through the real Claude Code and
// Codex against their fake model servers. The second task resumes the first's harness session:
// the model is sent the first turn's prompt and answer.
import assert from "node:assert/strict";
import { SendMessageRequest, type Task, TaskState } from "@a2a-js/sdk";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { officialClient } from "../serve/_server.ts";
import { spawnReins } from "../support/reins.ts";
import { ensureCli, type Installed, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { type HarnessSpec, withDeadline } from "./_suite.ts";
import { claudeSpec, codexSpec } from "./_specs.ts";

const SPECS: HarnessSpec[] = [claudeSpec, codexSpec];
const installed: Record<string, Installed> = {};
for (const spec of SPECS) installed[spec.driver] = await ensureCli(spec.driver);

const send = (prompt: string, contextId?: string) =>
  SendMessageRequest.fromJSON({
    message: {
      messageId: crypto.randomUUID(),
      role: "ROLE_USER",
      parts: [{ text: prompt }],
      ...(contextId ? { contextId } : {}),
    },
  });

const answerOf = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts).map((p) =>
    p.content?.$case === "text" ? p.content.value : ""
  ).join("");

for (const spec of SPECS) {
  interopTest(
    installed[spec.driver],
    `reins serve --driver ${spec.driver}: two messages on one contextId continue one ${spec.cli} session (official A2A client, real ${spec.cli})`,
    async (program) => {
      await withDeadline(240, async () => {
        await using server = spec.serve(inOrder(text("First answer."), text("Second answer.")));
        await using scratch = await makeScratch(spec.driver, server.url);
        await Deno.mkdir(scratch.reinsHome, { recursive: true });
        await Deno.writeTextFile(
          `${scratch.reinsHome}/config.json`,
          JSON.stringify({
            drivers: { [spec.driver]: { args: scratch.args, idleTimeoutSeconds: 90 } },
          }),
        );
        const child = spawnReins(
          ["serve", "--port", "0", "--driver", spec.driver, "--cwd", scratch.cwd],
          {
            home: scratch.reinsHome,
            cwd: scratch.cwd,
            env: { ...scratch.env, [`REINS_${spec.driver.toUpperCase()}_BIN`]: program },
            allowRun: [program],
          },
        );
        const stderr = new Response(child.stderr).text();
        try {
          const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
          let out = "";
          while (!out.includes("\n")) {
            const { value, done } = await reader.read();
            if (done) throw new Error(`reins serve exited: ${await stderr}`);
            out += value;
          }
          reader.releaseLock();
          const base = new URL("/", out.trim()).href;
          const token = (await Deno.readTextFile(`${scratch.reinsHome}/serve.token`)).trim();
          const client = await officialClient(base, token);

          const first = await client.sendMessage(send("remember the word kiwi")) as Task;
          assert.equal(first.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(first));
          assert.equal(answerOf(first), "First answer.");
          const sessionFile =
            `${scratch.reinsHome}/contexts/${first.contextId}/harness-session.json`;
          const session = JSON.parse(await Deno.readTextFile(sessionFile));
          assert.equal(session.driver, spec.driver);
          assert.ok(session.native_session_id, "the CLI's own session id is kept");

          const second = await client.sendMessage(
            send("which word was it", first.contextId),
          ) as Task;
          assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED);
          assert.equal(second.contextId, first.contextId);
          assert.equal(answerOf(second), "Second answer.");
          const after = JSON.parse(await Deno.readTextFile(sessionFile));
          assert.equal(after.session_id, session.session_id);
          assert.equal(after.native_session_id, session.native_session_id);

          // The model saw the first turn in the second: one conversation.
          const calls = server.requests.filter(spec.isTurnCall);
          const lines = spec.transcript(calls[calls.length - 1]).join("\n");
          assert.match(lines, /remember the word kiwi/);
          assert.match(lines, /First answer\./);
          assert.match(lines, /which word was it/);
        } finally {
          child.kill("SIGTERM");
          const status = await child.status;
          await child.stdout.cancel().catch(() => {});
          assert.equal(status.code, 0, await stderr);
        }
      });
    },
  );
}
