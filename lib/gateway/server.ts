// The gateway's loopback HTTP server: one per process while any turn is bound to it (started by
// the first binding, shut down after the last one closes). A request's first path segment is the
// secret of the turn it belongs to and the second the route: `/SECRET/ROUTE/rest…` goes to that
// route's upstream + `/rest…`. An unknown secret or route is a 404 and nothing is recorded, so
// another local user can neither spend through it nor add to a recording.
import { type BindOptions, GatewayBinding } from "./binding.ts";
import { AnswerBrokeOff, handleCall } from "./call.ts";
import { onceAfter } from "../core/clock.ts";
import { routeOf } from "../net/route.ts";

/** A secret of 32 random bytes, base64url: what binds a request to its turn. */
function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * Deno.serve's report of a handler's failure: printed as Deno does, but for an answer broken off
 * (its upstream's, or its harness's, doing), which its call records.
 */
function serveError(error: unknown): Response {
  if (!(error instanceof AnswerBrokeOff)) console.error(error);
  return new Response("Internal Server Error", { status: 500 });
}

function notFound(): Response {
  return new Response("not found\n", { status: 404, headers: { "content-type": "text/plain" } });
}

export class GatewayServer {
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #bindings = new Map<string, GatewayBinding>();
  readonly origin: string;

  private constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {}, onError: serveError },
      (request, info) => this.#handle(request, info),
    );
    this.origin = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  static start(): GatewayServer {
    return new GatewayServer();
  }

  get bound(): number {
    return this.#bindings.size;
  }

  bind(options: BindOptions, onUnbound: () => Promise<void>): GatewayBinding {
    const secret = newSecret();
    const binding = new GatewayBinding(options, secret, this.origin, () => {
      this.#bindings.delete(secret);
      return onUnbound();
    });
    this.#bindings.set(secret, binding);
    return binding;
  }

  #handle(request: Request, info: Deno.ServeHandlerInfo): Promise<Response> | Response {
    const url = new URL(request.url);
    const path = url.pathname;
    const secretEnd = path.indexOf("/", 1);
    if (secretEnd < 0) return notFound();
    const binding = this.#bindings.get(path.slice(1, secretEnd));
    if (binding === undefined || binding.closed) return notFound();
    const routeEnd = path.indexOf("/", secretEnd + 1);
    const route = path.slice(secretEnd + 1, routeEnd < 0 ? undefined : routeEnd);
    const upstream = binding.upstreamOf(route, request.headers);
    if (upstream === null) return notFound();
    // The harness going away before its answer is whole: the connection closed first. (Not
    // request.signal, which Deno also aborts once an answer was delivered.)
    const gone = new AbortController();
    info.completed.catch(() => gone.abort(new DOMException("the harness went away", "AbortError")));
    const call = handleCall(binding, request, gone.signal, {
      route,
      upstream,
      path: routeEnd < 0 ? "" : path.slice(routeEnd),
      search: url.search,
    });
    // The turn's close waits for the call to be answered or given up (recorded either way).
    binding.waiting(call);
    return call;
  }

  /** Stops listening; calls still being answered are given `graceMs` to finish. */
  async shutdown(graceMs = 2_000): Promise<void> {
    await within(graceMs, this.#server.shutdown());
  }
}

/**
 * Waits for `work`, or `ms`, whichever is first (onceAfter: a turn's end does not load Deno's
 * Node timers, as the first setTimeout of a process does).
 */
async function within(ms: number, work: Promise<void>): Promise<void> {
  let timer: { cancel(): void } | undefined;
  const late = new Promise<void>((resolve) => timer = onceAfter(ms, resolve));
  try {
    await Promise.race([work, late]);
  } finally {
    timer?.cancel();
  }
}

/**
 * How long after the gateway starts fetch is made ready: by then the turn has started its
 * harness, which takes far longer than this to make its first call.
 */
const WARM_FETCH_AFTER_MS = 25;

/**
 * Makes fetch ready for the turn's first call while its harness starts: the first fetch of a
 * process loads Deno's fetch (20-30 ms of CPU measured here, a later one 1-5 ms), which would
 * otherwise be spent while the harness waits for its first answer. A `data:` URL: nothing is sent
 * anywhere. Only for a turn whose calls go through fetch (not lib/net's own sockets).
 */
function warmFetch(options: BindOptions): void {
  const fetched = Object.values(options.routes).some((target) => {
    try {
      return routeOf(new URL(target.upstream), options.proxy) === "fetch";
    } catch {
      return false;
    }
  });
  if (!fetched) return;
  onceAfter(WARM_FETCH_AFTER_MS, () => {
    fetch("data:,").then((answer) => answer.arrayBuffer()).catch(() => {});
  });
}

let shared: GatewayServer | null = null;
let users = 0;
let stopping: Promise<void> = Promise.resolve();

/**
 * Binds a turn to the process's gateway (started on first use): its harness's requests are
 * recorded into, and counted against, what `options` gives. Close the binding when the turn ends.
 */
export async function bindTurn(options: BindOptions): Promise<GatewayBinding> {
  // A server shutting down is let go before a new one starts.
  if (shared === null) await stopping;
  if (shared === null) {
    shared = GatewayServer.start();
    warmFetch(options);
  }
  const server = shared;
  users++;
  return server.bind(options, () => {
    users--;
    if (users > 0 || shared !== server) return Promise.resolve();
    shared = null;
    stopping = server.shutdown();
    return stopping;
  });
}
