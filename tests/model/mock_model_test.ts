import assert from "node:assert/strict";
import { UsageError } from "../../lib/core/errors.ts";
import { mockModel, recordedModel } from "../../lib/model/mock_model.ts";
import { ModelError, type ModelOutput, type ModelRequest } from "../../lib/model/model.ts";
import { resolveModel } from "../../lib/model/resolve_model.ts";
import { loadSettings } from "../../lib/core/config.ts";
import { withTempDir, writeScript } from "../drivers/loop/_helpers.ts";
import { reins, tempDir } from "../support/reins.ts";

const request: ModelRequest = {
  history: [{ role: "user", text: "hi" }],
  tools: [],
  purpose: "turn",
  signal: new AbortController().signal,
};

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

Deno.test("mockModel() serves the script's responses in order with defaults filled in", async () => {
  await withTempDir(async (dir) => {
    const path = await writeScript(dir, [
      {
        toolCalls: [{ name: "list_files" }, { id: "mine", name: "read_file", args: { path: "a" } }],
      },
      { text: "done", usage: { inputTokens: 10, outputTokens: 2 }, stopReason: "stop" },
    ]);
    const model = await mockModel(path);
    assert.equal(model.name, `mock:${path}`);
    assert.deepEqual(await model.complete(request), {
      text: null,
      toolCalls: [
        { id: "call_1_1", name: "list_files", args: {} },
        { id: "mine", name: "read_file", args: { path: "a" } },
      ],
      stopReason: "tool_use",
      usage: null,
      reasoning: null,
    });
    assert.deepEqual(await model.complete(request), {
      text: "done",
      toolCalls: [],
      stopReason: "stop",
      usage: { inputTokens: 10, outputTokens: 2 },
      reasoning: null,
    });
  });
});

Deno.test("mockModel() fails clearly when the script runs out of responses", async () => {
  await withTempDir(async (dir) => {
    const path = await writeScript(dir, [{ text: "only one" }]);
    const model = await mockModel(path);
    await model.complete(request);
    const error = await rejection(model.complete(request));
    assert.ok(error instanceof ModelError);
    assert.equal(
      error.message,
      `The mock model ${path} has no response left for model call 2: the script has 1`,
    );
  });
});

Deno.test("mockModel() names the file and the JSON path of a bad response", async () => {
  await withTempDir(async (dir) => {
    const path = await writeScript(dir, [{ text: "ok" }, { toolCalls: [{ name: 5 }] }]);
    const error = await rejection(mockModel(path));
    assert.ok(error instanceof UsageError);
    assert.equal(
      error.message,
      `Cannot use the mock model file ${path}: Invalid input: expected string, received number ` +
        "at $[1].toolCalls[0].name",
    );
  });
});

Deno.test("mockModel() refuses unknown keys, so a misspelt field is not silently ignored", async () => {
  await withTempDir(async (dir) => {
    const path = await writeScript(dir, [{ tool_calls: [] }]);
    const error = await rejection(mockModel(path));
    assert.equal(
      error.message,
      `Cannot use the mock model file ${path}: Unrecognized key: "tool_calls" at $[0]`,
    );
  });
});

Deno.test("mockModel() refuses a file that is not a JSON list", async () => {
  await withTempDir(async (dir) => {
    const notList = await writeScript(dir, { text: "x" });
    assert.equal(
      (await rejection(mockModel(notList))).message,
      `Cannot use the mock model file ${notList}: Invalid input: expected array, received object at $`,
    );
    const broken = `${dir}/broken.json`;
    await Deno.writeTextFile(broken, '[{"text": "x"},');
    const error = await rejection(mockModel(broken));
    assert.ok(error instanceof UsageError);
    assert.match(error.message, new RegExp(`^Cannot parse the mock model file ${broken}: `));
    const missing = `${dir}/missing.json`;
    assert.equal(
      (await rejection(mockModel(missing))).message,
      `Cannot read the mock model file ${missing}: no such file`,
    );
  });
});

Deno.test("recordedModel() serves recorded outputs verbatim and says when they run out", async () => {
  const recorded: ModelOutput[] = [
    {
      text: null,
      toolCalls: [{ id: "x1", name: "list_files", args: { path: "." } }],
      stopReason: "tool_use",
      usage: { inputTokens: 3 },
      reasoning: "look first",
    },
  ];
  const model = recordedModel(recorded, { source: "run 0192abc" });
  const served = await model.complete(request);
  assert.deepEqual(served, recorded[0]);
  served.toolCalls.push({ id: "x2", name: "oops", args: {} });
  assert.equal(recorded[0].toolCalls.length, 1, "serving must not hand out the recording itself");
  assert.equal(
    (await rejection(model.complete(request))).message,
    "Cannot replay model call 2: run 0192abc has only 1 recorded model outputs",
  );
});

Deno.test("resolveModel() picks the model from its spec and refuses unknown ones", async () => {
  await withTempDir(async (dir) => {
    const settings = loadSettings({ REINS_HOME: dir });
    assert.equal((await resolveModel(null, { settings })).name, "demo");
    assert.equal((await resolveModel("demo", { settings })).name, "demo");
    await writeScript(dir, [{ text: "hi" }]);
    const mock = await resolveModel("mock:script.json", { settings, baseDir: dir });
    assert.equal(mock.name, `mock:${dir}/script.json`);
    assert.equal((await resolveModel("openai:gpt-test", { settings })).name, "openai:gpt-test");
    const replay = await resolveModel("replay:run-9", {
      settings,
      loadRecording: (run) =>
        Promise.resolve([{
          text: `from ${run}`,
          toolCalls: [],
          stopReason: "end_turn",
          usage: null,
          reasoning: null,
        }]),
    });
    assert.equal((await replay.complete(request)).text, "from run-9");

    for (
      const [spec, message] of [
        ["gpt-4o", 'Cannot use the model "gpt-4o": unknown kind'],
        ["mock:", 'Cannot use the model "mock:": nothing follows "mock:"'],
        ["replay:abc", 'Cannot use the model "replay:abc" here'],
      ]
    ) {
      const error = await rejection(resolveModel(spec, { settings }));
      assert.ok(error instanceof UsageError, spec);
      assert.equal(error.message, message);
    }
    const badUrl = await rejection(
      resolveModel("openai:m", { settings, baseUrl: "ftp://example.com" }),
    );
    assert.equal(badUrl.message, 'Cannot use the base URL "ftp://example.com": it is not http(s)');
  });
});

/** The first ```json block of docs/loop.md's mock:FILE section. */
function documentedScript(): string {
  const text = Deno.readTextFileSync(new URL("../../docs/loop.md", import.meta.url));
  const section = text.slice(text.indexOf("### mock:FILE"));
  const match = /```json\n([\s\S]*?)```/.exec(section);
  assert.ok(match, "docs/loop.md shows a mock:FILE script");
  return match[1];
}

// regression: the mock:FILE format was documented only in the hints of its errors.
Deno.test("docs/loop.md's mock:FILE example is a script reins run plays to the end", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(`${dir.path}/script.json`, documentedScript());
  await Deno.writeTextFile(`${dir.path}/README.md`, "hello\n");
  const result = await reins(["run", "--model", "mock:script.json", "--json", "take notes"], {
    home,
    cwd: dir.path,
  });
  assert.equal(result.code, 0, result.stderr);
  const summary = JSON.parse(result.stdout);
  assert.equal(summary.status, "completed");
  assert.equal(summary.result, "I wrote NOTES.md.");
  assert.equal(await Deno.readTextFile(`${dir.path}/NOTES.md`), "# Notes\n");
  const shown = await reins(["show", "last", "--json"], { home, cwd: dir.path });
  const events = JSON.parse(shown.stdout).events as { type: string; payload: { ok?: boolean } }[];
  const tools = events.filter((event) => event.type === "tool.completed");
  assert.deepEqual(tools.map((event) => event.payload.ok), [true, true]);
  assert.equal(events.filter((event) => event.type === "model.completed").length, 3);
});
