// The recording as an upstream: a loopback HTTP server a replay's gateway routes go to, answering
// each model call with a recorded answer (status, headers, body, as the harness received it)
// instead of the model's, so a harness run replays with no network and no key. A request takes
// the first recorded call not yet served on the same route, method and path whose request
// matches (lib/gateway/replay_rules.ts); when none does, the first not yet served on that path is
// served anyway and the difference is a divergence; when none is left, the call is answered 400
// in the provider's shape (no harness retries that) and that is a divergence too.
import type { DataRoot } from "../store/data_root.ts";
import type { RunEvent } from "../store/contracts.ts";
import { errorResponse } from "./refusal.ts";
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

const decoder = new TextDecoder();

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

/** The recording of run `runId` served as an upstream; close it when the replay has ended. */
export class ReplayServer implements AsyncDisposable {
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly matcher: ReplayMatcher;
  readonly origin: string;
  readonly #root: DataRoot;
  readonly #runId: string;

  constructor(root: DataRoot, runId: string, calls: readonly RecordedCall[], paths: ReplayPaths) {
    this.#root = root;
    this.#runId = runId;
    this.matcher = new ReplayMatcher(calls, (sha) => this.#read(sha), paths);
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) => this.#handle(request),
    );
    this.origin = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** The upstream the replay's gateway sends `route`'s calls to. */
  upstreamOf(route: string): string {
    return `${this.origin}/${route}`;
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
    const route = url.pathname.slice(1, routeEnd < 0 ? undefined : routeEnd);
    const path = routeEnd < 0 ? "" : url.pathname.slice(routeEnd);
    const body = request.body === null ? null : new Uint8Array(await request.arrayBuffer());
    const recorded = this.matcher.take(route, request.method, path, body);
    const wire = wireOf(request.method, path);
    if (recorded === null) {
      return errorResponse(
        wire,
        400,
        `reins replay: the recording of ${this.#runId} has no more calls to ${path}`,
      );
    }
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

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#server.shutdown();
  }
}
