// The simulated user: its next message, its explicit end, and what it is (and is not) told.
import assert from "node:assert/strict";
import { END_TOOL, nextUserMove, SimulatedUserError } from "../../lib/suite/simulated_user.ts";
import { type MockResponse, scriptedModel } from "../../lib/model/mock_model.ts";
import type { Model, ModelRequest } from "../../lib/model/model.ts";
import { openaiModel } from "../../lib/model/openai_model.ts";
import { inOrder, text, toolCall } from "../fixtures/fake_model_server.ts";
import { chatTranscript, startFakeChat } from "../fixtures/fake_chat.ts";

const SCENARIO = {
  persona: { name: "Dana", role: "customer", mood: "impatient" },
  instruction: "Your order 1234 is ten days late and you want your money back.",
};

function recording(responses: MockResponse[]): Model & { requests: ModelRequest[] } {
  const inner = scriptedModel(responses, { name: "mock:dana.json", source: "dana.json" });
  const requests: ModelRequest[] = [];
  return {
    name: inner.name,
    requests,
    complete(request) {
      requests.push(request);
      return inner.complete(request);
    },
  };
}

const signal = new AbortController().signal;

Deno.test("nextUserMove() says the model's text, then ends when it calls end_conversation", async () => {
  const model = recording([
    { text: "  Where is my order 1234?  " },
    { toolCalls: [{ name: "end_conversation", args: { reason: "refunded" } }] },
    { toolCalls: [{ name: "end_conversation" }] },
  ]);
  assert.deepEqual(await nextUserMove(model, SCENARIO, [], signal), {
    kind: "say",
    text: "Where is my order 1234?",
  });
  const exchanges = [{ user: "Where is my order 1234?", agent: "It is late. Sorry!" }];
  assert.deepEqual(await nextUserMove(model, SCENARIO, exchanges, signal), {
    kind: "end",
    reason: "refunded",
  });
  assert.deepEqual(await nextUserMove(model, SCENARIO, exchanges, signal), {
    kind: "end",
    reason: "the user ended it",
  });

  // Its own messages are the assistant's, the agent's answers the user's; it knows its persona
  // and situation, and the end tool.
  const [first, second] = model.requests;
  assert.deepEqual(first.tools, [END_TOOL]);
  assert.deepEqual(second.history.map((m) => m.role), ["system", "user", "assistant", "user"]);
  const system = second.history[0];
  assert.ok(system.role === "system");
  assert.match(system.text, /"mood":"impatient"/);
  assert.match(system.text, /ten days late/);
  assert.deepEqual(second.history.slice(2).map((m) => "text" in m ? m.text : null), [
    "Where is my order 1234?",
    "It is late. Sorry!",
  ]);
});

Deno.test("nextUserMove() refuses a model that neither speaks nor ends, and one that fails", async () => {
  await assert.rejects(
    () => nextUserMove(recording([{ text: "   " }]), SCENARIO, [], signal),
    (error) =>
      error instanceof SimulatedUserError &&
      error.message ===
        "The simulated user (mock:dana.json) neither wrote a message nor ended the conversation",
  );
  await assert.rejects(
    () => nextUserMove(recording([]), SCENARIO, [], signal),
    (error) =>
      error instanceof SimulatedUserError &&
      /^The simulated user \(mock:dana\.json\) could not answer: The mock model dana\.json has no response left/
        .test(error.message),
  );
});

Deno.test("nextUserMove() plays the persona through a Chat Completions endpoint", async () => {
  await using server = startFakeChat(
    inOrder(text("I want my money back."), toolCall("end_conversation", { reason: "done" })),
  );
  const model = openaiModel({ model: "gpt-4.1-mini", baseUrl: `${server.url}/v1`, apiKey: null });
  assert.deepEqual(await nextUserMove(model, SCENARIO, [], signal), {
    kind: "say",
    text: "I want my money back.",
  });
  const exchanges = [{ user: "I want my money back.", agent: "Refunded." }];
  assert.deepEqual(await nextUserMove(model, SCENARIO, exchanges, signal), {
    kind: "end",
    reason: "done",
  });
  const lines = chatTranscript(server.modelCalls()[1]);
  assert.deepEqual(lines.slice(-2), ["assistant: I want my money back.", "user: Refunded."]);
});
