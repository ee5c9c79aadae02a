// The generated validators in the tree are what the zod schemas give today: a schema changed
// without `deno task gen` fails here (and the generator itself is held to zod by
// tests/store/schema_codegen_test.ts).
import assert from "node:assert/strict";
import { generate, TARGETS } from "../../scripts/gen_checks.ts";
import { EVENT_TYPES, RUN_RECORD_FIELDS } from "../../lib/store/contracts.ts";
import { EVENT_TYPE_NAMES, RECORD_FIELDS } from "../../lib/store/contract_checks.ts";

const ROOT = new URL("../../", import.meta.url);

for (const target of TARGETS) {
  Deno.test(`${target.path} is what scripts/gen_checks.ts makes of the schemas`, () => {
    const current = Deno.readTextFileSync(new URL(target.path, ROOT));
    assert.ok(current === generate(target), `${target.path} is stale: run deno task gen`);
  });
}

Deno.test("the generated names of event types and record fields are the schemas' own", () => {
  assert.deepEqual([...EVENT_TYPE_NAMES], EVENT_TYPES);
  assert.deepEqual([...RECORD_FIELDS], RUN_RECORD_FIELDS);
});

Deno.test("the generated event validator (payloads as shared functions) agrees with zod", async () => {
  const fc = (await import("fast-check")).default;
  const { RunEvent } = await import("../../lib/store/contracts.ts");
  const { validateRunEvent } = await import("../../lib/store/contract_checks.ts");
  const { anyJson, eventInput } = await import("./_arbitraries.ts");
  const event = fc.tuple(fc.string({ minLength: 1, maxLength: 6 }), fc.nat(), eventInput).map((
    [id, sequence, body],
  ) => ({ id, runId: "r", sessionId: "s", sequence, timestamp: "2026-01-01T00:00:00Z", ...body }));
  fc.assert(
    fc.property(event, fc.nat(), anyJson, fc.boolean(), (value, pick, replacement, remove) => {
      const copy = structuredClone(value) as Record<string, unknown>;
      const payload = copy.payload as Record<string, unknown>;
      const targets: [Record<string, unknown>, string][] = [
        ...Object.keys(copy).map((k) => [copy, k] as [Record<string, unknown>, string]),
        ...Object.keys(payload).map((k) => [payload, k] as [Record<string, unknown>, string]),
      ];
      const [target, key] = targets[pick % targets.length];
      if (remove) delete target[key];
      else target[key] = replacement;
      const parsed = RunEvent.safeParse(copy);
      const expected = parsed.success ? null : {
        path: parsed.error.issues[0].path.map(String).join("."),
        message: parsed.error.issues[0].message,
      };
      assert.equal(validateRunEvent(value), null);
      assert.deepEqual(validateRunEvent(copy), expected, JSON.stringify(copy));
    }),
    { numRuns: 3000 },
  );
});

Deno.test("the generated config validators (shared driver, price and otel checks) agree with zod", async () => {
  const fc = (await import("fast-check")).default;
  const { ConfigFile } = await import("../../lib/core/config_schema.ts");
  const { validateConfigFile } = await import("../../lib/core/config_checks.ts");
  const { anyJson } = await import("./_arbitraries.ts");
  const file = {
    drivers: { claude: { program: "c", args: ["--x"] }, codex: { idleTimeoutSeconds: 3 } },
    prices: { m: { inputPerMillion: 1, outputPerMillion: 2 } },
    otel: { endpoint: "http://localhost:4318", headers: { a: "b" } },
  };
  fc.assert(
    fc.property(fc.nat(), anyJson, fc.boolean(), (pick, replacement, remove) => {
      const copy = structuredClone(file) as Record<string, unknown>;
      const targets: [Record<string, unknown>, string][] = [];
      const walk = (value: Record<string, unknown>) => {
        for (const key of Object.keys(value)) {
          targets.push([value, key]);
          const inner = value[key];
          if (inner && typeof inner === "object" && !Array.isArray(inner)) {
            walk(inner as Record<string, unknown>);
          }
        }
      };
      walk(copy);
      const [target, key] = targets[pick % targets.length];
      if (remove) delete target[key];
      else target[key] = replacement;
      const parsed = ConfigFile.safeParse(structuredClone(copy));
      const ours = structuredClone(copy);
      const issue = validateConfigFile(ours);
      if (parsed.success) {
        assert.equal(issue, null);
        assert.deepEqual(ours, parsed.data);
      } else {
        const first = parsed.error.issues[0];
        assert.deepEqual(issue, { path: first.path.map(String).join("."), message: first.message });
      }
    }),
    { numRuns: 2000 },
  );
});

// Lines as each CLI writes them (recorded; see the drivers' tests), each mutated at random.
const CLAUDE_SAMPLES: Record<string, unknown>[] = [
  { type: "system", subtype: "init", session_id: "s", tools: ["Bash"] },
  { type: "system", subtype: "api_retry", attempt: 1, error: { message: "overloaded" } },
  {
    type: "assistant",
    session_id: "s",
    parent_tool_use_id: null,
    message: {
      id: "m",
      model: "claude",
      content: [{ type: "text", text: "hi" }, {
        type: "tool_use",
        id: "t",
        name: "Bash",
        input: { command: "ls" },
      }],
    },
  },
  {
    type: "user",
    message: {
      content: [{ type: "tool_result", tool_use_id: "t", content: "ok", is_error: false }],
    },
  },
  {
    type: "control_request",
    request_id: "r",
    request: { subtype: "can_use_tool", tool_name: "Bash", input: {} },
  },
  {
    type: "result",
    subtype: "success",
    is_error: false,
    result: "done",
    total_cost_usd: 0.01,
    usage: { input_tokens: 3, output_tokens: 4, output_tokens_details: { thinking_tokens: 1 } },
  },
];

const CODEX_SAMPLES: Record<string, unknown>[] = [
  { type: "thread.started", thread_id: "t" },
  {
    type: "item.started",
    item: { id: "i", type: "command_execution", command: "ls", status: "in_progress" },
  },
  {
    type: "item.completed",
    item: {
      id: "i",
      type: "command_execution",
      command: "ls",
      aggregated_output: "a\n",
      exit_code: 0,
      status: "completed",
    },
  },
  {
    type: "item.completed",
    item: { id: "m", type: "mcp_tool_call", server: "s", tool: "t", error: { message: "no" } },
  },
  {
    type: "turn.completed",
    usage: { input_tokens: 5, cached_input_tokens: 1, output_tokens: 2 },
  },
  { type: "turn.failed", error: { message: "boom" } },
  { type: "error", message: "reconnecting" },
];

const GEMINI_SAMPLES: Record<string, unknown>[] = [
  { type: "init", session_id: "s", model: "gemini-test" },
  { type: "message", role: "assistant", content: "hi", delta: true },
  { type: "tool_use", tool_name: "ls", tool_id: "t", parameters: { path: "." } },
  { type: "tool_result", tool_id: "t", status: "error", output: "", error: { message: "no" } },
  { type: "error", message: "quota" },
  {
    type: "result",
    status: "success",
    stats: {
      input_tokens: 6,
      output_tokens: 1,
      cached: 2,
      models: { "gemini-test": { input_tokens: 6, output_tokens: 1, cached: 2 } },
    },
  },
];

const OPENCODE_SAMPLES: Record<string, unknown>[] = [
  { type: "step_start", sessionID: "s", part: { type: "step-start" } },
  { type: "text", sessionID: "s", part: { type: "text", text: "hi" } },
  {
    type: "tool_use",
    sessionID: "s",
    part: {
      callID: "c",
      tool: "bash",
      state: { status: "completed", input: {}, output: "ok", time: { start: 1, end: 2 } },
    },
  },
  {
    type: "step_finish",
    sessionID: "s",
    part: {
      cost: 0.1,
      tokens: { input: 3, output: 4, reasoning: 0, cache: { read: 1, write: 0 } },
    },
  },
  {
    type: "error",
    sessionID: "s",
    error: { name: "APIError", data: { message: "bad key", statusCode: 401 } },
  },
];

for (
  const [cli, wire, samples, validatorsName, linesName] of [
    ["Claude Code", "claude_wire.ts", CLAUDE_SAMPLES, "validateClaudeLine", "CLAUDE_LINES"],
    ["Codex", "codex_wire.ts", CODEX_SAMPLES, "validateCodexLine", "CODEX_LINES"],
    ["Gemini CLI", "gemini_wire.ts", GEMINI_SAMPLES, "validateGeminiLine", "GEMINI_LINES"],
    ["opencode", "opencode_wire.ts", OPENCODE_SAMPLES, "validateOpencodeLine", "OPENCODE_LINES"],
  ] as const
) {
  Deno.test(`the generated ${cli} line validators agree with their zod schemas`, async () => {
    const fc = (await import("fast-check")).default;
    const lines = (await import(`../../lib/drivers/${wire}`))[linesName] as Record<
      string,
      import("zod").ZodType
    >;
    const validators = (await import("../../lib/drivers/wire_checks.ts"))[validatorsName];
    const { anyJson } = await import("./_arbitraries.ts");
    const schemaOf = (type: string) => Object.hasOwn(lines, type) ? type : "*";
    fc.assert(
      fc.property(
        fc.constantFrom(...samples),
        fc.nat(),
        anyJson,
        fc.boolean(),
        (sample, pick, value, remove) => {
          const copy = structuredClone(sample);
          const targets: [Record<string, unknown>, string][] = [];
          const walk = (node: Record<string, unknown>) => {
            for (const key of Object.keys(node)) {
              targets.push([node, key]);
              const inner = node[key];
              if (inner && typeof inner === "object") walk(inner as Record<string, unknown>);
            }
          };
          walk(copy);
          const [target, key] = targets[pick % targets.length];
          if (remove) delete target[key];
          else target[key] = value;
          const type = schemaOf(String(sample.type));
          const parsed = lines[type].safeParse(copy);
          const expected = parsed.success ? null : {
            path: parsed.error.issues[0].path.map(String).join("."),
            message: parsed.error.issues[0].message,
          };
          assert.equal(validators[type](sample), null, JSON.stringify(sample));
          assert.deepEqual(validators[type](copy), expected, JSON.stringify(copy));
        },
      ),
      { numRuns: 2000 },
    );
  });
}
