// One model call through the gateway: the harness's request passed on to its upstream with its
// own credentials, the answer streamed back chunk by chunk as it arrives (status, headers and
// Retry-After as the upstream sent them), and the call recorded at the wire — `model.call.started`
// once the call is on its way (after the answer's first piece is passed on), its bodies out of
// line, the streamed text as `message.delta`, and `model.call.completed` with the answer's status,
// timing, model, stop reason and usage. A call the budget refuses is answered here, in the
// provider's error shape; an upstream that cannot be reached is a 502 in that shape, and one that
// breaks off mid-answer breaks off the harness's too.
import { describeError } from "../core/errors.ts";
import { onceAfter } from "../core/clock.ts";
import { exhaustionReason } from "../core/budget.ts";
import { rememberSecrets } from "../core/redact.ts";
import { outboundFetch } from "../net/outbound.ts";
import { localHandler } from "./local_upstreams.ts";
import type { EventInput, PayloadOf, WireBody } from "../store/mod.ts";
import { AnswerTap } from "./answer_tap.ts";
import type { AnswerBody } from "./bodies.ts";
import {
  credentialValues,
  downstreamHeaders,
  queryCredentials,
  recordedQuery,
  recordedRequestHeaders,
  recordedResponseHeaders,
  upstreamHeaders,
} from "./headers.ts";
import { errorResponse, REFUSED_STATUS, UNREACHABLE_STATUS } from "./refusal.ts";
import { generates, requestFacts, wireOf } from "./wires.ts";
import type { CallContext } from "./binding.ts";

/**
 * How long after a call went upstream its `model.call.started` is recorded at the latest, should
 * no piece of the answer have come by then (a model server thinking before its first byte).
 */
export const STARTED_AFTER_MS = 10;

/** An answer that is not a stream is read for its usage up to this size. */
const JSON_ANSWER_LIMIT = 16 * 1024 * 1024;

const decoder = new TextDecoder();

type Completed = PayloadOf<"model.call.completed">;
/** What a call's end records besides its id and duration. */
interface CompletedFields {
  outcome: Completed["outcome"];
  status: number | null;
  headers: Record<string, string>;
  body: WireBody | null;
  chunks: number[][];
  model: string | null;
  responseId?: string;
  stopReason: string | null;
  usage: Completed["usage"];
  firstByteMs: number | null;
  error?: string;
}

/** Where a call goes: the upstream base URL and the path and query below it. */
export interface CallTarget {
  route: string;
  upstream: string;
  /** Below the route, starting with "/" (or ""). */
  path: string;
  search: string;
}

/** Joins an upstream base URL (which may have a path, `…/v1`) and a path below it. */
export function upstreamUrl(upstream: string, path: string, search: string): URL {
  const base = upstream.replace(/\/+$/, "");
  return new URL(`${base}${path}${search}`);
}

function parseJson(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return null;
  }
}

/** Handles one request of a bound turn; resolves with what the harness is answered. */
export async function handleCall(
  context: CallContext,
  request: Request,
  gone: AbortSignal,
  target: CallTarget,
): Promise<Response> {
  // A Codex WebSocket upgrade is declined with 426, on which Codex goes over to HTTPS at once.
  if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
    return new Response("reins's model gateway passes HTTP calls only", { status: 426 });
  }
  const arrivedMs = performance.now();
  const callId = context.nextCallId();
  const wire = wireOf(request.method, target.path);
  const isGeneration = generates(wire);
  // The harness's own credentials pass on; their values become secrets every sink redacts.
  rememberSecrets(...credentialValues(request.headers), ...queryCredentials(target.search));
  let bytes: Uint8Array;
  try {
    bytes = request.body === null ? new Uint8Array(0) : await bodyOf(request, context.ending);
  } catch (error) {
    // The harness went away while sending it, or the turn ended first: nothing to pass on.
    return new Response(
      `reins's model gateway could not read the request: ${describeError(error)}`,
      {
        status: 400,
      },
    );
  }
  // What is recorded of the request (its facts, its body hashed and written) is made once the
  // call is on its way (see `announced` below).
  let requestBody: Promise<WireBody | null> | null = null;
  let facts: ReturnType<typeof requestFacts> | null = null;
  const factsOf = () =>
    facts ??= requestFacts(wire, target.path, wire === "opaque" ? null : parseJson(bytes));
  const startedOf = async (): Promise<PayloadOf<"model.call.started">> => {
    // The body is hashed (its name) while the call goes on: `started` is recorded once it is.
    requestBody ??= bytes.length > 0 ? context.bodies.request(bytes) : Promise.resolve(null);
    const { model, stream } = factsOf();
    return {
      callId,
      wire,
      generates: isGeneration,
      route: target.route,
      method: request.method,
      path: `${target.path}${recordedQuery(target.search)}`,
      model,
      stream,
      headers: recordedRequestHeaders(request.headers),
      body: await requestBody,
    };
  };
  const completed = (fields: CompletedFields): EventInput => ({
    type: "model.call.completed",
    payload: { callId, ...fields, durationMs: elapsed(arrivedMs) },
  });

  if (isGeneration) {
    const refusal = context.ledger.refusal();
    if (refusal !== null) {
      const reason = exhaustionReason(refusal);
      context.emit({ type: "model.call.started", payload: await startedOf() });
      context.emit(completed({
        outcome: "refused",
        status: REFUSED_STATUS,
        headers: {},
        body: null,
        chunks: [],
        model: factsOf().model,
        stopReason: null,
        usage: null,
        firstByteMs: null,
        error: reason,
      }));
      context.exhausted(refusal);
      return errorResponse(
        wire,
        REFUSED_STATUS,
        `reins: ${reason}: no more model calls in this turn`,
      );
    }
  }
  const warnings = isGeneration ? context.ledger.startCall() : [];

  // The call goes upstream first, and is recorded after.
  const url = upstreamUrl(target.upstream, target.path, target.search);
  // Until the model server answers, the turn's end gives the call up too (its harness has
  // exited); once it has, only the harness going away does.
  const waiting = new AbortController();
  const giveUp = () => waiting.abort(context.ending.reason);
  if (context.ending.aborted) giveUp();
  else context.ending.addEventListener("abort", giveUp, { once: true });
  const init = {
    method: request.method,
    headers: upstreamHeaders(request.headers),
    body: bytes.length > 0 || !["GET", "HEAD"].includes(request.method)
      ? bytes as Uint8Array<ArrayBuffer>
      : undefined,
    signal: AbortSignal.any([gone, waiting.signal]),
    redirect: "manual" as const,
  };
  let asked: Promise<Response>;
  try {
    // A recording this process serves (a replay) is asked directly, not over a connection.
    const local = localHandler(url);
    asked = local !== undefined
      ? local(new Request(url, init))
      : outboundFetch(url, init, { proxy: context.proxy });
  } catch (error) {
    asked = Promise.reject(error);
  }
  asked.catch(() => {});
  // `model.call.started` (the request parsed, its body hashed and written: ~1-3 ms of this thread
  // on a first call of ~50 kB) is recorded once the answer's first piece is passed on, or
  // STARTED_AFTER_MS after the call went upstream if no piece came by then, whichever is first:
  // never between the call and the harness's first byte, where a model server on this machine
  // answering within a millisecond would wait for it. Nothing else of the call is recorded
  // before it (every later event of the call awaits `announced`).
  let announce!: () => void;
  const due = new Promise<void>((resolve) => announce = resolve);
  const dueTimer = onceAfter(STARTED_AFTER_MS, announce);
  const announced = due.then(startedOf).then((started) => {
    context.emit({ type: "model.call.started", payload: started });
    context.budgetWarnings(warnings);
  });
  const announceNow = () => {
    dueTimer.cancel();
    announce();
    return announced;
  };
  let upstream: Response;
  try {
    upstream = await asked;
  } catch (error) {
    const away = gone.aborted || waiting.signal.aborted;
    const message = gone.aborted
      ? "the harness went away before the model server answered"
      : away
      ? "the turn ended before the model server answered"
      : `reins's model gateway cannot reach ${url.host}: ${whyUnreachable(error)}`;
    await announceNow();
    context.emit(completed({
      outcome: away ? "aborted" : "failed",
      status: away ? null : UNREACHABLE_STATUS,
      headers: {},
      body: null,
      chunks: [],
      model: factsOf().model,
      stopReason: null,
      usage: null,
      firstByteMs: null,
      error: message,
    }));
    if (!away && isGeneration) context.upstreamTrouble(UNREACHABLE_STATUS, message);
    if (isGeneration) context.budgetWarnings(context.ledger.endCall(0, 0));
    return errorResponse(wire, UNREACHABLE_STATUS, message);
  }
  context.ending.removeEventListener("abort", giveUp);
  const headMs = elapsed(arrivedMs);
  // From here the call's recording is waited for as its bodies are (the binding's close): it
  // goes on after its answer's last piece was passed on, and its answer's file may not be begun.
  let callRecorded!: () => void;
  context.bodies.track(new Promise<void>((resolve) => callRecorded = resolve));
  // fetch decodes a compressed body itself (the gateway asks for none; a server may still send it).
  const decoded = upstream.headers.has("content-encoding") &&
    !/^identity$/i.test(upstream.headers.get("content-encoding") ?? "");
  const recordedHeaders = recordedResponseHeaders(upstream.headers);
  if (decoded) delete recordedHeaders["content-encoding"];
  const contentType = upstream.headers.get("content-type") ?? "";
  // Written and read as it passes, on this thread: the text as it streams, the facts and the
  // body's hash at the end. Made once `started` is recorded (its file too), not on the way to
  // the harness's first byte.
  let answer: AnswerBody | null = null;
  let tapped: AnswerTap | null = null;
  const tapOf = (): AnswerTap =>
    tapped ??= new AnswerTap({
      wire,
      format: /text\/event-stream/i.test(contentType)
        ? "sse"
        : /json/i.test(contentType)
        ? "json"
        : "none",
      jsonLimit: JSON_ANSWER_LIMIT,
      answer: answer = context.bodies.answer(callId),
      text: (piece) => context.delta(callId, piece),
    });
  const chunks: number[][] = [];
  /** The first piece's recording, after it was passed on (see pull). */
  let firstTapped: Promise<void> = Promise.resolve();
  let firstByteMs: number | null = null;
  let settled = false;

  const settle = async (outcome: "ok" | "error" | "failed" | "aborted", error?: string) => {
    if (settled) return;
    settled = true;
    try {
      await record(outcome, error);
    } finally {
      callRecorded();
    }
  };
  const record = async (outcome: "ok" | "error" | "failed" | "aborted", error?: string) => {
    await firstTapped;
    await announceNow();
    const tap = tapOf();
    const recorded = await tap.finish();
    context.flushDelta(callId);
    let body: WireBody | null = null;
    try {
      body = await answer!.finish(recorded);
    } catch (thrown) {
      context.warn(`the answer to ${callId} could not be kept: ${describeError(thrown)}`);
    }
    const { id, model, stopReason, usage } = recorded.facts;
    const priced = context.price(model ?? factsOf().model, usage, wire);
    const failure = error ?? recorded.facts.error ?? undefined;
    context.emit(completed({
      outcome,
      status: upstream.status,
      headers: recordedHeaders,
      body,
      chunks,
      model: model ?? factsOf().model,
      ...(id === null ? {} : { responseId: id }),
      stopReason,
      usage: priced,
      firstByteMs: firstByteMs ?? headMs,
      ...(failure === undefined ? {} : { error: failure }),
    }));
    if (isGeneration) {
      context.budgetWarnings(context.ledger.endCall(
        (priced?.inputTokens ?? 0) + (priced?.outputTokens ?? 0),
        usage === null ? 0 : priced?.costUsd ?? null,
      ));
      if (upstream.status >= 500 || upstream.status === 429) {
        context.upstreamTrouble(upstream.status, failure ?? upstream.statusText);
      } else if (upstream.ok && outcome === "ok") context.upstreamFine();
    }
  };

  if (upstream.body === null) {
    await settle(upstream.ok ? "ok" : "error");
    return new Response(null, {
      status: upstream.status,
      statusText: upstream.statusText,
      headers: downstreamHeaders(upstream.headers, decoded),
    });
  }
  const source = upstream.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await source.read();
      } catch (error) {
        const away = gone.aborted;
        // The harness's connection is broken off too; the call is recorded, not printed.
        controller.error(new AnswerBrokeOff(error));
        await settle(
          away ? "aborted" : "failed",
          away
            ? "the harness went away mid-answer"
            : `the answer broke off: ${describeError(error)}`,
        );
        return;
      }
      if (next.done) {
        controller.close();
        await settle(upstream.ok ? "ok" : "error");
        return;
      }
      const piece = next.value;
      // Passed on first: the harness reads it while it is recorded.
      controller.enqueue(piece);
      const atMs = elapsed(arrivedMs);
      firstByteMs ??= atMs;
      chunks.push([piece.length, atMs]);
      if (chunks.length === 1) {
        // The first piece leaves for the harness (on the event loop's next turn) before `started`
        // is recorded and the piece with it; the stream goes on meanwhile (an answer in one piece
        // ends at once), each later piece recorded after it.
        firstTapped = nextTurn().then(announceNow).then(() => tapOf().piece(piece) ?? undefined);
        firstTapped.catch(() => {});
        return;
      }
      await firstTapped;
      // The disk is waited for only when it falls behind (and node:crypto once, as a long answer
      // passes 256 KiB): the stream is not held for each piece.
      const behind = tapOf().piece(piece);
      if (behind !== null) await behind;
    },
    async cancel(reason) {
      await source.cancel(reason).catch(() => {});
      await settle("aborted", "the harness went away mid-answer");
    },
  });
  return new Response(body, {
    status: upstream.status,
    statusText: upstream.statusText,
    headers: downstreamHeaders(upstream.headers, decoded),
  });
}

/** A request's body, read whole; given up (rejected) should `ending` abort first. */
function bodyOf(request: Request, ending: AbortSignal): Promise<Uint8Array> {
  if (ending.aborted) return Promise.reject(ending.reason);
  return new Promise((resolve, reject) => {
    const giveUp = () => reject(ending.reason);
    ending.addEventListener("abort", giveUp, { once: true });
    request.arrayBuffer().then(
      (buffer) => resolve(new Uint8Array(buffer)),
      reject,
    ).finally(() => ending.removeEventListener("abort", giveUp));
  });
}

/**
 * What a streamed answer is ended with when its upstream broke off (or its harness went away):
 * the call is recorded so, and the gateway's server does not print it as a failure of its own.
 */
export class AnswerBrokeOff extends Error {
  constructor(cause: unknown) {
    super(`the answer broke off: ${describeError(cause)}`, { cause });
    this.name = "AnswerBrokeOff";
  }
}

/** What went wrong reaching an upstream: fetch says "fetch failed" and puts the why in its cause. */
function whyUnreachable(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  const said = describeError(error);
  return cause instanceof Error && /^fetch failed$/i.test(said) ? describeError(cause) : said;
}

function elapsed(fromMs: number): number {
  return Math.round((performance.now() - fromMs) * 10) / 10;
}

/** Resolves on a later turn of the event loop (once what was handed to it meanwhile went out). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => onceAfter(0, resolve));
}
