// `reins serve` as a library: an A2A 1.0 server (JSON-RPC and HTTP+JSON, SSE for streams) whose
// tasks are reins runs and whose contexts are reins contexts. startServer() listens and answers; the
// returned handle stops it gracefully (no new connections or tasks, running turns given a grace
// period, then stopped and recorded) or at once. Nothing here reads flags, signals or the
// environment: lib/cli/serve.ts does, and hands in the store and the turn runner.
import { a2aHandler } from "./a2a_http.ts";
import { AGENT_CARD_PATH, agentCard } from "./agent_card.ts";
import { BearerCheck } from "./auth.ts";
import {
  type ConnectionReport,
  DEFAULT_HTTP_LIMITS,
  type HttpLimits,
  HttpServer,
} from "./http/server.ts";
import { A2AService } from "./service.ts";
import type { ServeStore, TurnRunner } from "./turns.ts";

export type { ServeStore, ServeTurn, ServeTurnHooks, TurnRunner } from "./turns.ts";
export { DEFAULT_HTTP_LIMITS, type HttpLimits };

/** Deeper JSON than this is refused before it is parsed (see json_depth.ts). */
export const DEFAULT_MAX_JSON_DEPTH = 64;

export interface ServerOptions {
  hostname: string;
  /** 0: any free port. */
  port: number;
  /** The URL clients reach the server at, when it is not where it listens (behind a proxy). */
  publicUrl?: string;
  token: string;
  store: ServeStore;
  runTurn: TurnRunner;
  /** The driver turns run on, for the card. */
  driver: string;
  maxTurns: number;
  limits?: Partial<HttpLimits>;
  maxJsonDepth?: number;
  /** How long CancelTask lets an agent stop before it is killed. */
  cancelGraceMs?: number;
  warn?(message: string): void;
  /** A line for the operator when a task starts and when it ends. */
  log?(message: string): void;
  onError?(error: unknown): void;
  onConnectionClosed?(report: ConnectionReport): void;
}

export interface RunningServer {
  /** Where JSON-RPC requests go (the card's interface URL). */
  readonly url: string;
  readonly cardUrl: string;
  readonly addr: Deno.NetAddr;
  readonly service: A2AService;
  readonly http: HttpServer;
  /**
   * Stops gracefully: no new connections or tasks; turns under way get `graceMs` to finish, then
   * are stopped (and killed `killGraceMs` later); resolves once all is recorded and closed.
   */
  shutdown(graceMs: number, killGraceMs?: number): Promise<void>;
  /** Stops at once (tests): turns are stopped and connections closed. */
  close(): Promise<void>;
}

function urlHost(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

export function startServer(options: ServerOptions): RunningServer {
  const service = new A2AService({
    store: options.store,
    runTurn: options.runTurn,
    maxTurns: options.maxTurns,
    cancelGraceMs: options.cancelGraceMs,
    warn: options.warn,
    log: options.log,
  });
  // The card needs the port, known once listening; the handler reads the card when asked.
  let cardJson = "";
  const handlerOptions = {
    service,
    get cardJson() {
      return cardJson;
    },
    bearer: new BearerCheck(options.token),
    maxJsonDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
    onError: options.onError,
  };
  let handler: ReturnType<typeof a2aHandler> | null = null;
  const http = HttpServer.listen({
    hostname: options.hostname,
    port: options.port,
    limits: options.limits,
    onConnectionClosed: options.onConnectionClosed,
    onError: options.onError,
    handler: {
      head: (head, info) => handler!.head(head, info),
      handle: (head, body, info) => handler!.handle(head, body, info),
    },
  });
  const { addr } = http;
  const base = options.publicUrl ?? `http://${urlHost(addr.hostname)}:${addr.port}/`;
  const url = new URL(base).href;
  cardJson = JSON.stringify(agentCard({ url, driver: options.driver }));
  handler = a2aHandler(handlerOptions);
  const cardUrl = new URL(AGENT_CARD_PATH.slice(1), url.endsWith("/") ? url : `${url}/`).href;

  let stopping: Promise<void> | null = null;
  const shutdown = (graceMs: number, killGraceMs = 5_000) =>
    stopping ??= (async () => {
      http.stopAccepting();
      await service.drain(graceMs, killGraceMs);
      // Streams end with their tasks; give the last bytes a moment to leave, then close.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waited = new Promise<boolean>((resolve) => timer = setTimeout(resolve, 2_000, false));
      const done = await Promise.race([http.drained().then(() => true), waited]);
      clearTimeout(timer);
      if (!done) await http.close();
    })();
  return {
    url,
    cardUrl,
    addr,
    service,
    http,
    shutdown,
    close: async () => {
      await shutdown(0, 1_000);
      await http.close();
    },
  };
}

// What the other rooms use besides:
export { dataRootToken, readTokenFile } from "./auth.ts";
