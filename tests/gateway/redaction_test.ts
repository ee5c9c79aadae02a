// A known secret cut between the pieces of what the gateway records is never written: an
// upstream on port 0 sends answers (SSE and JSON) with the harness's key cut at every offset, in
// 1-byte pieces and in three, each piece sent only once the harness has the one before (so the
// gateway reads them apart, and cannot be holding any back from the harness); the run is recorded
// through the store into a temp data root, and every file under it is read for the key. The text
// streamed as message.delta is read back too, joined. RedactedStream itself is checked against
// the whole body's redaction for any cuts (fast-check).
import assert from "node:assert/strict";
import fc from "fast-check";
import { BudgetLedger } from "../../lib/core/budget.ts";
import { knownSecrets, rememberSecrets } from "../../lib/core/redact.ts";
import { NO_PROXY_SETTINGS } from "../../lib/net/route.ts";
import { bindTurn } from "../../lib/gateway/mod.ts";
import { redactedBytes, RedactedStream } from "../../lib/gateway/redacted_bytes.ts";
import { openStore } from "../../lib/store/store.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// Not of any token shape the sinks know (sk-…, Bearer …): only knowing it as the harness's key
// redacts it.
const KEY = "sentinel0Zq9xY7wV5uT3sR1pO8nM6lK4jH2g";

const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

/**
 * `text` cut into pieces around each of its occurrences of KEY: the first KEY.length - 1 cut once
 * at every offset, the next in 1-byte pieces, the next in three; so it must hold KEY.length + 1.
 */
function cutAtEveryOffset(text: string): Uint8Array[] {
  const bytes = encoder.encode(text);
  const cuts: number[] = [];
  let occurrence = 0;
  for (let at = text.indexOf(KEY); at >= 0; at = text.indexOf(KEY, at + 1), occurrence++) {
    if (occurrence < KEY.length - 1) cuts.push(at + occurrence + 1);
    else if (occurrence === KEY.length - 1) {
      for (let i = 0; i <= KEY.length; i++) cuts.push(at + i);
    } else if (occurrence === KEY.length) cuts.push(at + 12, at + 25);
  }
  assert.ok(occurrence > KEY.length, `only ${occurrence} occurrences of the key`);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const cut of cuts) {
    if (cut > from) pieces.push(bytes.subarray(from, cut));
    from = Math.max(from, cut);
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

/** What the harness has received, for the upstream to send its next piece only after it. */
class Lockstep {
  received = 0;
  #waiting: (() => void)[] = [];
  got(bytes: number): void {
    this.received += bytes;
    for (const wake of this.#waiting.splice(0)) wake();
  }
  async reach(bytes: number): Promise<void> {
    while (this.received < bytes) await new Promise<void>((wake) => this.#waiting.push(wake));
  }
}

/** An upstream answering the n-th call with answers[n]: its pieces, each after `pause` ms. */
type Answer = { type: string; pieces: Uint8Array[]; pause?: number };

/** Every file under `dir`, read whole, that holds `needle`. */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  const wanted = encoder.encode(needle);
  const walk = async (path: string) => {
    for await (const entry of Deno.readDir(path)) {
      const child = `${path}/${entry.name}`;
      if (entry.isDirectory) await walk(child);
      else if (entry.isFile) {
        const bytes = await Deno.readFile(child);
        const text = decoder.decode(bytes);
        if (text.includes(needle) || holds(bytes, wanted)) found.push(child);
      }
    }
  };
  await walk(dir);
  return found;
}

function holds(bytes: Uint8Array, part: Uint8Array): boolean {
  outer: for (let at = bytes.indexOf(part[0]); at >= 0; at = bytes.indexOf(part[0], at + 1)) {
    for (let i = 0; i < part.length; i++) if (bytes[at + i] !== part[i]) continue outer;
    return true;
  }
  return false;
}

/**
 * A turn's calls through the gateway to an upstream giving `answers` in turn, recorded into a
 * run of a real store: the bytes each call's harness received, the text the run's
 * message.delta events tell per call, and the files under the data root holding the key.
 */
async function recordedTurn(answers: Answer[]) {
  const dir = await Deno.makeTempDir({ prefix: "reins-redaction-" });
  let calls = 0;
  const steps: Lockstep[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.arrayBuffer();
    const answer = answers[calls];
    const step = steps[calls++];
    let next = 0;
    let sent = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          await step.reach(sent);
          if (next > 0 && answer.pause) await new Promise((r) => setTimeout(r, answer.pause));
          if (next === answer.pieces.length) return controller.close();
          const piece = answer.pieces[next++];
          controller.enqueue(piece);
          sent += piece.length;
        },
      }),
      { headers: { "content-type": answer.type } },
    );
  });
  try {
    const store = openStore(`${dir}/home`);
    const writer = store.createRun({
      sessionId: "s",
      contextId: "c",
      harness: "claude",
      driver: "claude",
      trigger: "cli",
      cwd: dir,
      goal: "say the key",
    });
    const binding = await bindTurn({
      root: store,
      runId: writer.runId,
      routes: { up: { upstream: `http://127.0.0.1:${server.addr.port}/v1` } },
      emit: (event) => writer.append(event),
      ledger: new BudgetLedger([]),
      priceOf: () => null,
      proxy: NO_PROXY_SETTINGS,
    });
    const received: Uint8Array[] = [];
    for (let i = 0; i < answers.length; i++) {
      const step = new Lockstep();
      steps.push(step);
      const response = await fetch(`${binding.routeUrl("up")}/messages`, {
        method: "POST",
        headers: { "x-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ model: "claude-x", stream: true, messages: [`use ${KEY}`] }),
      });
      const parts: Uint8Array[] = [];
      const reader = response.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(value);
        step.got(value.length);
      }
      received.push(concat(parts));
    }
    await binding.close();
    writer.close();
    const told = new Map<string, string>();
    for (const event of store.readEvents(writer.runId).events) {
      if (event.type !== "message.delta") continue;
      const { callId, text } = event.payload;
      told.set(String(callId), (told.get(String(callId)) ?? "") + text);
    }
    store.close();
    return { received, told, leaked: await filesHolding(dir, KEY) };
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all;
}

Deno.test("gateway never records the harness's key cut between an answer's pieces (SSE and JSON), and passes every piece on as it came", async () => {
  const texts: string[] = [];
  let stream = sse({
    type: "message_start",
    message: { id: "msg_1", model: "claude-x", usage: { input_tokens: 3, output_tokens: 1 } },
  }, "message_start");
  for (let i = 0; i <= KEY.length + 1; i++) {
    // Near misses around it too: the key's beginning alone, and again just before it.
    const text = `part ${i}: ${KEY.slice(0, 1 + (i % (KEY.length - 1)))}, ` +
      `${KEY.slice(0, 6)}${KEY} done ✓\n`;
    texts.push(text);
    stream += sse(
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
      "content_block_delta",
    );
  }
  stream += sse({ type: "message_delta", delta: { stop_reason: "end_turn" } }, "message_delta");
  const json = JSON.stringify({
    id: "msg_2",
    model: "claude-x",
    content: texts.map((text) => ({ type: "text", text })),
    usage: { input_tokens: 3, output_tokens: 5 },
  });
  const sent = [cutAtEveryOffset(stream), cutAtEveryOffset(json)];
  const { received, told, leaked } = await recordedTurn([
    { type: "text/event-stream", pieces: sent[0] },
    { type: "application/json", pieces: sent[1] },
  ]);
  // The harness got the upstream's bytes, unchanged (and each piece before the next was sent).
  assert.equal(decoder.decode(received[0]), stream);
  assert.equal(decoder.decode(received[1]), json);
  assert.deepEqual(leaked, []);
  // The text told is the model's, but for the key.
  assert.equal(told.get("call-1"), texts.join("").replaceAll(KEY, "[redacted]"));
});

Deno.test("gateway never records the key cut between two message.delta events: at an event's 16 Ki characters, or its 100 ms", async () => {
  const event = (text: string) =>
    sse(
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
      "content_block_delta",
    );
  // One text the size of several events, the key across each 16 Ki-character boundary of it at
  // another offset.
  let long = "";
  for (const offset of [1, 17, KEY.length - 1]) {
    const boundary = long.length === 0 ? 16 * 1024 : (Math.ceil(long.length / 16384) + 1) * 16384;
    long += "x".repeat(boundary - offset - long.length) + KEY;
  }
  long += " end";
  // The key's two halves in two text events, a pause of well past 100 ms between them.
  const half = 20;
  const answers: Answer[] = [
    { type: "text/event-stream", pieces: [encoder.encode(event(long))] },
    {
      type: "text/event-stream",
      pieces: [event(`the key is ${KEY.slice(0, half)}`), event(`${KEY.slice(half)}, said`)]
        .map((text) => encoder.encode(text)),
      pause: 300,
    },
  ];
  const { told, leaked } = await recordedTurn(answers);
  assert.deepEqual(leaked, []);
  // Joined, the events tell the text but for the key (cut between two, neither had it whole).
  assert.equal(told.get("call-2"), "the key is [redacted], said");
  assert.ok(!told.get("call-1")!.includes(KEY), "the key is told whole over two events");
  assert.equal(told.get("call-1"), long.replaceAll(KEY, "[redacted]"));
});

Deno.test("RedactedStream keeps what redactedBytes keeps of the whole, however the stream is cut", () => {
  // Secrets that begin as they go on (xyxy…, aaa…), of characters of several bytes, and one with
  // a quote (so of two forms: itself, and JSON-escaped). No two can overlap in a text: the text
  // with each replaced is one answer, redactedBytes's and knownSecrets.exact's alike.
  const secrets = ["ab€cd\u00e9-secret", "xyxyz-secret", "aaab-secret", 'q"uote-secret'];
  rememberSecrets(...secrets);
  const alphabet = [
    ...'abxyzq"\\-é€ ',
    ...secrets,
    ...secrets.map((secret) => JSON.stringify(secret).slice(1, -1)),
    "secret",
  ];
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom(...alphabet), { maxLength: 40 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      fc.boolean(),
      (words, cutsAt, withText) => {
        const bytes = encoder.encode(words.join(""));
        const cuts = [...new Set(cutsAt.map((cut) => cut % (bytes.length + 1)))].sort((a, b) =>
          a - b
        );
        const stream = new RedactedStream();
        const streaming = new TextDecoder();
        const kept: Uint8Array[] = [];
        let from = 0;
        for (const cut of [...cuts, bytes.length]) {
          const piece = bytes.subarray(from, cut);
          const text = withText ? streaming.decode(piece, { stream: true }) : undefined;
          kept.push(stream.piece(piece, text));
          from = cut;
        }
        kept.push(stream.end());
        const whole = decoder.decode(concat(kept));
        assert.equal(whole, knownSecrets.exact(words.join("")));
        assert.deepEqual(concat(kept), redactedBytes(bytes));
        assert.ok(!knownSecrets.holdsSecret(whole), whole);
      },
    ),
    { numRuns: 3000 },
  );
});

Deno.test("a key remembered while an answer's text is gathered is not cut between two message.delta events either", async () => {
  rememberSecrets(KEY);
  // Longer than any key known before: the end kept to look for a key's beginning must grow.
  const later = "later0Key9Abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_more";
  const dir = await Deno.makeTempDir({ prefix: "reins-redact-" });
  const texts: string[] = [];
  const store = openStore(`${dir}/home`);
  try {
    const runId = "run-later";
    store.ensureDir(store.layout.run(runId));
    const binding = await bindTurn({
      root: store,
      runId,
      routes: {},
      emit: (event) => {
        if (event.type === "message.delta") texts.push((event.payload as { text: string }).text);
      },
      ledger: new BudgetLedger([]),
      priceOf: () => null,
      proxy: NO_PROXY_SETTINGS,
    });
    const first = "x".repeat(16 * 1024 - 70) + later.slice(0, 60);
    binding.delta("call-1", first);
    rememberSecrets(later);
    binding.delta("call-1", later.slice(60) + " and on".repeat(20));
    binding.flushDelta("call-1");
    await binding.close();
    assert.equal(texts.join(""), first + later.slice(60) + " and on".repeat(20));
    assert.ok(texts.some((text) => text.includes(later)), "the key is cut between two events");
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
