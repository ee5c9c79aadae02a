// A reins A2A server in this process for tests: a real store in a temp dir, the real turn engine
// with the agent a test asks for, listening on a free port; and the official A2A client
// (@a2a-js/sdk) pointed at it with the bearer token.
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  createAuthenticatingFetchWithRetry,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import { loadSettings } from "../../lib/core/config.ts";
import type { AgentSpec, ApprovalPolicy } from "../../lib/drivers/driver.ts";
import { type RunningServer, type ServerOptions, startServer } from "../../lib/serve/mod.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";
import { driverNameOf } from "../../lib/drivers/driver.ts";

export const TOKEN = "test-token-0123456789abcdef";
export const FIXTURES = new URL("./fixtures/", import.meta.url).pathname;

export interface TestServer extends AsyncDisposable {
  dir: string;
  home: string;
  work: string;
  store: Store;
  server: RunningServer;
  /** Runs `cleanup` when the server is disposed (before its directory goes). */
  defer(cleanup: () => void): void;
  /** The official client, authenticated (over JSON-RPC unless `binding` says "rest"). */
  client(binding?: "jsonrpc" | "rest"): Promise<Client>;
  /** A raw JSON-RPC call (for what the client does not send), parsed answer and HTTP status. */
  rpc(
    method: string,
    params?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
}

export interface TestServerOptions {
  /** The agent, or a function that makes it in the test's directory (a script it writes). */
  agent?: AgentSpec | ((dir: string) => AgentSpec | Promise<AgentSpec>);
  approval?: ApprovalPolicy;
  timeoutSeconds?: number;
  /** An existing data root (a restart); else a new temp dir. */
  dir?: string;
  server?: Partial<ServerOptions>;
}

export const commandAgent = (exec: string): AgentSpec => ({
  kind: "command",
  exec,
  idleTimeoutSeconds: null,
});

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = options.dir ??
    await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-serve-" }));
  const home = `${dir}/home`;
  const work = `${dir}/work`;
  await Deno.mkdir(work, { recursive: true });
  const store = openStore(home);
  const settings = loadSettings({ REINS_HOME: home, HOME: dir, REINS_CONFIG: `${dir}/none.json` });
  const agent = typeof options.agent === "function"
    ? await options.agent(dir)
    : options.agent ?? { kind: "loop", model: null, baseUrl: null };
  const server = startServer({
    hostname: "127.0.0.1",
    port: 0,
    token: TOKEN,
    store,
    driver: driverNameOf(agent),
    maxTurns: 4,
    ...options.server,
    runTurn: (turn, signals, hooks) =>
      runTurn(
        store,
        settings,
        {
          agent,
          prompt: turn.prompt,
          promptMessageId: turn.messageId,
          cwd: work,
          contextId: turn.contextId,
          approval: options.approval ?? "auto",
          budget: {},
          timeoutSeconds: options.timeoutSeconds ?? null,
          parentRunId: null,
          trigger: "a2a",
        },
        signals,
        hooks,
      ),
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const cleanups: (() => void)[] = [];
  return {
    defer: (cleanup) => cleanups.push(cleanup),
    dir,
    home,
    work,
    store,
    server,
    client: (binding) => officialClient(base, TOKEN, binding),
    async rpc(method, params = {}, headers = {}) {
      const response = await fetch(`${base}/`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${TOKEN}`,
          "a2a-version": "1.0",
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return { status: response.status, body: await response.json() };
    },
    async [Symbol.asyncDispose]() {
      for (const cleanup of cleanups) cleanup();
      await server.close();
      store.close();
      if (options.dir === undefined) await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * The SDK's client for the agent at `base`, sending `Authorization: Bearer <token>`, over the
 * JSON-RPC binding (or HTTP+JSON with `binding: "rest"`).
 */
export function officialClient(
  base: string,
  token: string,
  binding: "jsonrpc" | "rest" = "jsonrpc",
): Promise<Client> {
  const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
    headers: () => Promise.resolve({ authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: () => Promise.resolve(undefined),
  });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      // Both authenticated (the defaults are not), the binding asked for preferred.
      transports: [
        new JsonRpcTransportFactory({ fetchImpl }),
        new RestTransportFactory({ fetchImpl }),
      ],
      preferredTransports: [binding === "rest" ? "HTTP+JSON" : "JSONRPC"],
    }),
  );
  return factory.createFromUrl(base);
}

/** Polls `check` until it answers truthy (or fails after `ms`). */
export async function eventually<T>(
  check: () => T | Promise<T>,
  what: string,
  ms = 10_000,
): Promise<NonNullable<Awaited<T>>> {
  const end = Date.now() + ms;
  while (true) {
    const value = await check();
    if (value) return value as NonNullable<Awaited<T>>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
