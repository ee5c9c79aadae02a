// The recording as an upstream: a loopback HTTP server a replay's gateway routes go to, answering
// each model call with a recorded answer (status, headers, body, as the harness received it)
// instead of the model's, so a harness run replays with no network and no key. A request takes
// the first recorded call not yet served on the same route, method and path whose request
// matches (lib/gateway/replay_rules.ts); when none does, the first not yet served on that path is
// served anyway and the difference is a divergence; when none is left, the call is answered 400
// in the provider's shape (no harness retries that) and that is a divergence too.
import type { DataRoot, RunEvent } from "../store/mod.ts";
import { errorResponse } from "./refusal.ts";
import { describeError } from "../core/errors.ts";
import { onceAfter } from "../core/clock.ts";
import { serveLocally } from "./local_upstreams.ts";
import { outboundFetch } from "../net/outbound.ts";
import { NO_PROXY_SETTINGS, type ProxySettings } from "../net/route.ts";
import { upstreamUrl } from "./call.ts";
import { downstreamHeaders, upstreamHeaders } from "./headers.ts";
import { generates, type Wire, wireOf } from "./wires.ts";
import {
  type Comparable,
  comparable,
  type Difference,
  differences,
  type ReplayPaths,
  whereDiffering,
} from "./replay_rules.ts";

/** One call of the recording that can be served again. */
export interface RecordedCall {
  /** The recorded run's call id (`call-3`). */
  callId: string;
  route: string;
  method: string;
  /** Below the route, without the query. */
  path: string;
  wire: Wire;
  requestSha: string | null;
  status: number;
  headers: Record<string, string>;
  answerSha: string | null;
}

/** A call of the replay that is not what the recording has. */
export interface CallDivergence {
  /** The replay's model call (1-based, in the order they came). */
  call: number;
  wire: Wire;
  path: string;
  /** The recorded call served in its place (null: none was left). */
  recordedCallId: string | null;
  /** What differs: `messages`, `tools`; or `unrecorded` when the recording had no call left. */
  fields: string[];
  /** Where it first differs, and how each side has it. */
  difference?: Difference;
}

/** The calls of `events` (a run's) that a replay can serve: those the upstream answered. */
export function recordedCalls(events: readonly RunEvent[]): RecordedCall[] {
  const started = new Map<string, Extract<RunEvent, { type: "model.call.started" }>["payload"]>();
  const calls: RecordedCall[] = [];
  for (const event of events) {
    if (event.ignored !== undefined) continue;
    if (event.type === "model.call.started") started.set(event.payload.callId, event.payload);
    if (event.type !== "model.call.completed") continue;
    const start = started.get(event.payload.callId);
    const { status, outcome } = event.payload;
    // A refused call never left the gateway (the replay's own budget refuses it again).
    if (start === undefined || status === null || outcome === "refused") continue;
    calls.push({
      callId: start.callId,
      route: start.route,
      method: start.method,
      path: start.path.replace(/\?.*$/, ""),
      wire: start.wire,
      requestSha: start.body?.sha256 ?? null,
      status,
      headers: event.payload.headers,
      answerSha: event.payload.body?.sha256 ?? null,
    });
  }
  return calls;
}

/**
 * The first body `calls` of run `runId` name that is not on disk (its call, which body, the path
 * under the data root), or null: a recording missing one cannot be replayed as it was recorded.
 * `answers` false: only the requests (a replay sent upstream compares them, serves none).
 */
export function missingBody(
  root: DataRoot,
  runId: string,
  calls: readonly RecordedCall[],
  answers = true,
): { callId: string; which: "request" | "answer"; path: string } | null {
  for (const call of calls) {
    const bodies = [["request", call.requestSha], ["answer", answers ? call.answerSha : null]];
    for (const [which, sha] of bodies as ["request" | "answer", string | null][]) {
      if (sha === null) continue;
      const path = root.layout.wireBody(runId, sha);
      try {
        if (Deno.statSync(path).isFile) continue;
      } catch { /* not there */ }
      return { callId: call.callId, which, path };
    }
  }
  return null;
}

const decoder = new TextDecoder();

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function parse(bytes: Uint8Array | null): unknown {
  if (bytes === null || bytes.length === 0) return null;
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return null;
  }
}

/** Takes each request of a replay to the recorded call it replays, and says where they differ. */
export class ReplayMatcher {
  readonly #calls: readonly RecordedCall[];
  readonly #served = new Set<number>();
  readonly #comparables = new Map<number, Comparable | null>();
  readonly #readBody: (sha: string) => Uint8Array | null;
  readonly #paths: ReplayPaths;
  readonly divergences: CallDivergence[] = [];
  #taken = 0;

  constructor(
    calls: readonly RecordedCall[],
    readBody: (sha: string) => Uint8Array | null,
    paths: ReplayPaths,
  ) {
    this.#calls = calls;
    this.#readBody = readBody;
    this.#paths = paths;
  }

  #recordedComparable(index: number): Comparable | null {
    if (!this.#comparables.has(index)) {
      const call = this.#calls[index];
      const body = call.requestSha === null ? null : this.#readBody(call.requestSha);
      this.#comparables.set(index, comparable(call.wire, parse(body), this.#paths));
    }
    return this.#comparables.get(index)!;
  }

  /** Reads and normalizes every recorded request now (else each on first use). */
  prepare(): void {
    for (let index = 0; index < this.#calls.length; index++) this.#recordedComparable(index);
  }

  /** The recorded call a request replays (null: none left), noting a divergence if it differs. */
  take(route: string, method: string, path: string, body: Uint8Array | null): RecordedCall | null {
    const call = ++this.#taken;
    const bare = path.replace(/\?.*$/, "");
    const wire = wireOf(method, bare);
    const mine = comparable(wire, parse(body), this.#paths);
    let fallback: { index: number; fields: string[] } | null = null;
    for (let index = 0; index < this.#calls.length; index++) {
      const recorded = this.#calls[index];
      if (this.#served.has(index)) continue;
      if (recorded.route !== route || recorded.method !== method || recorded.path !== bare) {
        continue;
      }
      const fields = differences(this.#recordedComparable(index), mine);
      if (fields.length === 0) {
        this.#served.add(index);
        return recorded;
      }
      fallback ??= { index, fields };
    }
    if (fallback === null) {
      if (generates(wire)) {
        this.divergences.push({
          call,
          wire,
          path: bare,
          recordedCallId: null,
          fields: ["unrecorded"],
        });
      }
      return null;
    }
    this.#served.add(fallback.index);
    const recorded = this.#calls[fallback.index];
    const difference = whereDiffering(this.#recordedComparable(fallback.index), mine);
    this.divergences.push({
      call,
      wire,
      path: bare,
      recordedCallId: recorded.callId,
      fields: fallback.fields,
      ...(difference === null ? {} : { difference }),
    });
    return recorded;
  }

  /**
   * The recorded call not yet served whose request matches (null: none): a suite's --reuse, which
   * passes anything else on to the model.
   */
  match(route: string, method: string, path: string, body: Uint8Array | null): RecordedCall | null {
    const bare = path.replace(/\?.*$/, "");
    const mine = comparable(wireOf(method, bare), parse(body), this.#paths);
    for (let index = 0; index < this.#calls.length; index++) {
      const recorded = this.#calls[index];
      if (this.#served.has(index)) continue;
      if (recorded.route !== route || recorded.method !== method || recorded.path !== bare) {
        continue;
      }
      if (mine === null && recorded.requestSha !== null) {
        // An opaque call matches on its bytes.
        const theirs = this.#readBody(recorded.requestSha);
        if (theirs === null || body === null || !sameBytes(theirs, body)) continue;
      } else if (differences(this.#recordedComparable(index), mine).length > 0) continue;
      this.#served.add(index);
      return recorded;
    }
    return null;
  }

  /** Recorded calls that generate and that the replay never made. */
  unused(): RecordedCall[] {
    return this.#calls.filter((call, index) => !this.#served.has(index) && generates(call.wire));
  }

  /** How many recorded calls were served, and how many of them matched. */
  get counts(): { recorded: number; served: number; matching: number } {
    const generating = this.#calls.filter((call) => generates(call.wire)).length;
    const served = [...this.#served].filter((index) => generates(this.#calls[index].wire)).length;
    const differing = this.divergences.filter((d) => d.recordedCallId !== null && generates(d.wire))
      .length;
    return { recorded: generating, served, matching: served - differing };
  }
}

/** Headers a recorded answer is served again with (its length may not be the recorded one's). */
const NOT_SERVED = new Set([
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "connection",
]);

/** How a ReplayServer answers what it has no recorded call for. */
export interface ReplayServing {
  /**
   * "replay" (the default): the next recorded call of the path, or a 400, and a divergence.
   * "reuse": only a matching recorded call is served; anything else goes on to the route's real
   * upstream (a suite's --reuse), counted in `passedOn`.
   */
  mode?: "replay" | "reuse";
  proxy?: ProxySettings;
}

/** The recording of run `runId` served as an upstream; close it when the replay has ended. */
export class ReplayServer implements AsyncDisposable {
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly matcher: ReplayMatcher;
  readonly origin: string;
  readonly #root: DataRoot;
  readonly #runId: string;
  readonly #serving: ReplayServing;
  readonly #local: () => void;
  /** The real upstream behind each name the gateway is given (`route`, `route@2`). */
  readonly #upstreams = new Map<string, string>();
  /** Calls answered from the recording, and passed on to the real upstream (reuse). */
  reused = 0;
  passedOn = 0;

  constructor(
    root: DataRoot,
    runId: string,
    calls: readonly RecordedCall[],
    paths: ReplayPaths,
    serving: ReplayServing = {},
  ) {
    this.#root = root;
    this.#runId = runId;
    this.#serving = serving;
    this.matcher = new ReplayMatcher(calls, (sha) => this.#read(sha), paths);
    // The recorded requests are read while the harness starts, not while it waits for an answer
    // (onceAfter: not keeping the process alive, and not loading Deno's Node timers as the first
    // setTimeout of a process does).
    onceAfter(0, () => this.matcher.prepare());
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) => this.#handle(request),
    );
    this.origin = `http://127.0.0.1:${this.#server.addr.port}`;
    // The gateway of this process asks it directly; the server answers anyone else.
    this.#local = serveLocally(this.origin, (request) => this.#handle(request));
  }

  /**
   * The upstream the replay's gateway sends `route`'s calls to; `real`, the harness's own, is
   * where a reuse passes on what the recording does not have.
   */
  upstreamOf(route: string, real?: string): string {
    const target = real ?? "";
    let name = route;
    for (let n = 2; this.#upstreams.has(name) && this.#upstreams.get(name) !== target; n++) {
      name = `${route}@${n}`;
    }
    this.#upstreams.set(name, target);
    return `${this.origin}/${name}`;
  }

  #read(sha: string): Uint8Array | null {
    try {
      return Deno.readFileSync(this.#root.layout.wireBody(this.#runId, sha));
    } catch {
      return null;
    }
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const routeEnd = url.pathname.indexOf("/", 1);
    const name = url.pathname.slice(1, routeEnd < 0 ? undefined : routeEnd);
    const route = name.replace(/@\d+$/, "");
    const path = routeEnd < 0 ? "" : url.pathname.slice(routeEnd);
    const body = request.body === null ? null : new Uint8Array(await request.arrayBuffer());
    const wire = wireOf(request.method, path);
    if (this.#serving.mode === "reuse") {
      const recorded = this.matcher.match(route, request.method, path, body);
      if (recorded !== null) {
        if (generates(wire)) this.reused++;
        return this.#answer(recorded, wire);
      }
      if (generates(wire)) this.passedOn++;
      return await this.#passOn(
        request,
        this.#upstreams.get(name) ?? "",
        path,
        url.search,
        body,
        wire,
      );
    }
    const recorded = this.matcher.take(route, request.method, path, body);
    if (recorded === null) {
      return errorResponse(
        wire,
        400,
        `reins replay: the recording of ${this.#runId} has no more calls to ${path}`,
      );
    }
    return this.#answer(recorded, wire);
  }

  #answer(recorded: RecordedCall, wire: Wire): Response {
    const headers = new Headers();
    for (const [name, value] of Object.entries(recorded.headers)) {
      if (!NOT_SERVED.has(name.toLowerCase())) headers.set(name, value);
    }
    const answer = recorded.answerSha === null ? null : this.#read(recorded.answerSha);
    if (recorded.answerSha !== null && answer === null) {
      return errorResponse(
        wire,
        502,
        `reins replay: the answer to ${recorded.callId} of ${this.#runId} is not on disk`,
      );
    }
    return new Response(answer as Uint8Array<ArrayBuffer> | null, {
      status: recorded.status,
      headers,
    });
  }

  /** A call the recording has not: to the real upstream, its answer streamed back as it comes. */
  async #passOn(
    request: Request,
    upstream: string,
    path: string,
    search: string,
    body: Uint8Array | null,
    wire: Wire,
  ): Promise<Response> {
    if (upstream === "") {
      return errorResponse(wire, 502, `reins: no upstream to pass ${path} on to`);
    }
    const url = upstreamUrl(upstream, path, search);
    try {
      const answer = await outboundFetch(url, {
        method: request.method,
        headers: upstreamHeaders(request.headers),
        body: body !== null && body.length > 0 ? body as Uint8Array<ArrayBuffer> : undefined,
        signal: request.signal,
        redirect: "manual",
      }, { proxy: this.#serving.proxy ?? NO_PROXY_SETTINGS });
      const decoded = answer.headers.has("content-encoding") &&
        !/^identity$/i.test(answer.headers.get("content-encoding") ?? "");
      return new Response(answer.body, {
        status: answer.status,
        statusText: answer.statusText,
        headers: downstreamHeaders(answer.headers, decoded),
      });
    } catch (error) {
      return errorResponse(
        wire,
        502,
        `reins's model gateway cannot reach ${url.host}: ${describeError(error)}`,
      );
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#local();
    await this.#server.shutdown();
  }
}
