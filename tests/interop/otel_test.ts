// A real agent CLI's run exported as an OpenTelemetry trace: `reins run --driver <cli>` under the
// binary's sandbox against a fake model server (one shell tool call, then an answer), then
// `reins export otel last` to a fake OTLP receiver. Claude Code in full (a chat span per API
// message with its usage, the tool call with its approval, the provider and model); the other
// CLIs for what they report.
import assert from "node:assert/strict";
import type { HarnessDriver } from "../../lib/core/config.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { ANTHROPIC_USAGE } from "../fixtures/fake_anthropic.ts";
import { attributeOf, type OtlpSpan, startFakeCollector } from "../fixtures/fake_otlp.ts";
import { reins, type ReinsOptions } from "../support/reins.ts";
import { ensureCli, type Installed, interopTest } from "./_install.ts";
import { makeScratch, type Scratch } from "./_scratch.ts";
import { type HarnessSpec, withDeadline } from "./_suite.ts";
import { claudeSpec, codexSpec, geminiSpec, opencodeSpec } from "./_specs.ts";

const SPECS: HarnessSpec[] = [claudeSpec, codexSpec, geminiSpec, opencodeSpec];
const installed: Record<string, Installed> = {};
for (const spec of SPECS) installed[spec.driver] = await ensureCli(spec.driver);

async function reinsFor(driver: HarnessDriver, program: string, scratch: Scratch) {
  await Deno.mkdir(scratch.reinsHome, { recursive: true });
  await Deno.writeTextFile(
    `${scratch.reinsHome}/config.json`,
    JSON.stringify({ drivers: { [driver]: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
  );
  return {
    home: scratch.reinsHome,
    cwd: scratch.cwd,
    env: { ...scratch.env, [`REINS_${driver.toUpperCase()}_BIN`]: program },
    allowRun: [program],
  } satisfies ReinsOptions;
}

/** Records one turn with a shell tool call and exports it; returns the run id and the spans. */
async function runAndExport(spec: HarnessSpec, program: string, approve = "auto") {
  await using server = spec.serve(inOrder(spec.shellTool, text("Written.")));
  await using scratch = await makeScratch(spec.driver, server.url);
  await using collector = startFakeCollector();
  const options = await reinsFor(spec.driver, program, scratch);
  const ran = await reins(
    [
      "run",
      "--driver",
      spec.driver,
      "--approve",
      approve,
      "--context",
      "ticket-3",
      "--json",
      "write out.txt",
    ],
    options,
  );
  assert.equal(ran.code, 0, ran.stderr);
  const runId: string = JSON.parse(ran.stdout).runId;
  const exported = await reins(["export", "otel", "last"], {
    ...options,
    env: { ...options.env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
  });
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(collector.received.length, 1);
  assert.ok(!collector.received[0].raw.includes('"gen_ai.system"'));
  const turns = server.modelCalls().filter((call) => spec.isTurnCall(call));
  const asked = (turns[0]?.body as { model?: string } | null)?.model ?? null;
  return { runId, spans: collector.spans(), raw: collector.received[0].raw, asked };
}

function rootOf(spans: OtlpSpan[], runId: string): OtlpSpan {
  const [root] = spans;
  assert.equal(root.parentSpanId, undefined);
  assert.equal(root.traceId, runId.replaceAll("-", ""));
  for (const span of spans.slice(1)) assert.equal(span.parentSpanId, root.spanId);
  return root;
}

interopTest(
  installed.claude,
  "reins export otel of a Claude Code run: invoke_agent claude-code, chat spans per API message, the refused Bash call (real Claude Code)",
  async (program) => {
    await withDeadline(240, async () => {
      // --approve deny: Claude Code asks reins over stdio and is refused, so the trace has the
      // approval and a refused tool call.
      const { runId, spans, raw, asked } = await runAndExport(claudeSpec, program, "deny");
      assert.ok(asked, "Claude Code named its model");
      const root = rootOf(spans, runId);
      assert.equal(root.name, "invoke_agent claude-code");
      assert.equal(root.kind, 1);
      const attrs = root.attributes;
      assert.deepEqual(attributeOf(attrs, "gen_ai.provider.name"), { stringValue: "anthropic" });
      assert.deepEqual(attributeOf(attrs, "gen_ai.agent.name"), { stringValue: "claude-code" });
      assert.deepEqual(attributeOf(attrs, "gen_ai.agent.version"), { stringValue: "2.1.328" });
      // The model Claude Code asked the server for (its own default: the scratch sets none).
      assert.deepEqual(attributeOf(attrs, "gen_ai.request.model"), { stringValue: asked });
      assert.deepEqual(attributeOf(attrs, "gen_ai.conversation.id"), { stringValue: "ticket-3" });
      assert.deepEqual(attributeOf(attrs, "reins.driver"), { stringValue: "claude" });
      assert.deepEqual(attributeOf(attrs, "reins.status"), { stringValue: "completed" });
      const input = attributeOf(attrs, "gen_ai.usage.input_tokens") as { intValue: number };
      assert.ok(
        Number.isInteger(input.intValue) && input.intValue >= 2 * ANTHROPIC_USAGE.input_tokens,
      );
      assert.ok(
        "doubleValue" in (attributeOf(attrs, "reins.cost_usd") ?? {}),
        "Claude Code's cost",
      );

      const chats = spans.filter((span) => span.name === `chat ${asked}`);
      assert.equal(chats.length, 2, "one per API message: the tool call, then the answer");
      for (const chat of chats) {
        assert.equal(chat.kind, 3, "CLIENT");
        assert.deepEqual(attributeOf(chat.attributes, "gen_ai.usage.input_tokens"), {
          intValue: ANTHROPIC_USAGE.input_tokens,
        });
        assert.match(
          (attributeOf(chat.attributes, "gen_ai.response.id") as { stringValue: string })
            .stringValue,
          /^msg_fake_/,
        );
      }
      const tool = spans.find((span) => span.name === "execute_tool Bash");
      assert.ok(tool, spans.map((s) => s.name).join(", "));
      assert.equal(tool.status.code, 2);
      assert.deepEqual(attributeOf(tool.attributes, "error.type"), { stringValue: "denied" });
      assert.deepEqual(tool.events.map((e) => e.name), [
        "reins.approval.requested",
        "reins.approval.resolved",
      ]);
      assert.deepEqual(attributeOf(tool.events[1].attributes, "reins.approval.decision"), {
        stringValue: "deny",
      });
      assert.ok(BigInt(chats[0].endTimeUnixNano) <= BigInt(tool.startTimeUnixNano) + 1_000_000n);
      assert.ok(BigInt(tool.endTimeUnixNano) <= BigInt(chats[1].endTimeUnixNano));
      assert.ok(!raw.includes("write out.txt"), "the prompt is content");
      assert.ok(!raw.includes("tool-ran"), "the command is content");
    });
  },
);

const PROVIDERS: Record<string, string> = {
  codex: "openai",
  gemini: "gcp.gemini",
  opencode: "opencode",
};

for (const spec of [codexSpec, geminiSpec, opencodeSpec]) {
  interopTest(
    installed[spec.driver],
    `reins export otel of a run of ${spec.cli}: the root span with the provider and usage, a chat span per model call the gateway saw, the tool call (real ${spec.cli})`,
    async (program) => {
      await withDeadline(240, async () => {
        const { runId, spans } = await runAndExport(spec, program);
        const root = rootOf(spans, runId);
        assert.match(root.name, /^invoke_agent /);
        assert.deepEqual(attributeOf(root.attributes, "gen_ai.provider.name"), {
          stringValue: PROVIDERS[spec.driver],
        });
        assert.deepEqual(attributeOf(root.attributes, "reins.status"), {
          stringValue: "completed",
        });
        const input = attributeOf(root.attributes, "gen_ai.usage.input_tokens");
        assert.ok(input === undefined || "intValue" in input, JSON.stringify(input));
        const tools = spans.filter((span) => span.name.startsWith("execute_tool "));
        assert.ok(tools.length >= 1, spans.map((s) => s.name).join(", "));
        // Through the gateway, every harness's calls are chat spans (the tool call, the answer).
        const chats = spans.filter((span) => span.name.startsWith("chat"));
        assert.ok(chats.length >= 2, spans.map((s) => s.name).join(", "));
        for (const chat of chats) {
          assert.equal(chat.kind, 3, "CLIENT");
          assert.ok(attributeOf(chat.attributes, "reins.model.call.id"), chat.name);
        }
      });
    },
  );
}
