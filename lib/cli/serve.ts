// `reins serve`: the A2A 1.0 server (lib/serve) over this data root and the turn engine, with
// the agent the flags describe. It prints the agent card's URL once listening, and turns the
// first SIGTERM or SIGINT into a graceful stop (no new tasks; running turns get --grace seconds,
// then are stopped and recorded), a second one into a quick one; it exits 0 once all is recorded.
import { CONFINE_FLAGS, settingsWithConfine } from "./confine_flags.ts";
import { requireConfinement } from "../confine/probe.ts";
import { keepSandboxesReady } from "../confine/confinement.ts";
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import { rememberSecrets } from "../core/redact.ts";
import { resolvePath } from "../core/paths.ts";
import { openStore } from "../store/store.ts";
import { runTurn } from "../turn/run_turn.ts";
import { driverNameOf } from "../drivers/driver.ts";
import { dataRootToken, readTokenFile } from "../serve/auth.ts";
import { startServer } from "../serve/mod.ts";
import { AGENT_FLAGS, agentFlags, checkCwd } from "./run.ts";

export const usage =
  "reins serve [--port N] [--host H] [--token-file F] [--max-turns N] [agent flags of reins run]";
export const description =
  "Serves the agent the flags describe (as reins run would run it) over A2A 1.0: JSON-RPC over " +
  "HTTP, with Server-Sent Events for streams. Each task is a recorded run; a message's " +
  "contextId is a reins context, so messages on one context continue one harness session. " +
  "Requests need the bearer token: --token-file, else the data root's serve.token (made on " +
  "first start). Prints the agent card's URL when listening; SIGTERM stops it gracefully. See " +
  "docs/serve.md.";

const DEFAULT_PORT = 8765;
const DEFAULT_MAX_TURNS = 4;
const DEFAULT_GRACE_SECONDS = 30;

export const flags = defineFlags({
  ...CONFINE_FLAGS,
  port: {
    type: "integer",
    min: 0,
    max: 65535,
    value: "N",
    description: `port to listen on (default ${DEFAULT_PORT}; 0: any free one)`,
  },
  host: {
    type: "string",
    value: "H",
    description: "address to listen on (default 127.0.0.1; others need --token-file)",
  },
  "token-file": {
    type: "string",
    value: "F",
    description: "the bearer token, on the file's first line (default: DATA_ROOT/serve.token)",
  },
  "max-turns": {
    type: "integer",
    min: 1,
    max: 1000,
    value: "N",
    description: `turns at once; a message beyond is refused (default ${DEFAULT_MAX_TURNS})`,
  },
  "public-url": {
    type: "string",
    value: "URL",
    description: "the URL clients reach the server at, for the card (behind a proxy)",
  },
  grace: {
    type: "number",
    value: "SECONDS",
    description: `on SIGTERM, time running turns get to finish (default ${DEFAULT_GRACE_SECONDS})`,
  },
  driver: AGENT_FLAGS.driver,
  model: AGENT_FLAGS.model,
  "base-url": AGENT_FLAGS["base-url"],
  exec: AGENT_FLAGS.exec,
  "exec-stdin": AGENT_FLAGS["exec-stdin"],
  cwd: {
    type: "string",
    value: "DIR",
    description: "working directory of every turn (default: the current one)",
  },
  timeout: {
    type: "number",
    positive: true,
    value: "SECONDS",
    description: "fail a turn after this long",
  },
  approve: {
    type: "choice",
    choices: ["auto", "ask", "deny"],
    description: "tool use: run it, ask the A2A client (input-required), or refuse",
  },
  "max-calls": {
    type: "integer",
    value: "N",
    description: "budget per turn: model calls (reins run's --max-turns)",
  },
  "max-tokens": { type: "integer", value: "N", description: "budget per turn: tokens" },
  "max-usd": { type: "number", value: "X", description: "budget per turn: dollars" },
  "idle-timeout": AGENT_FLAGS["idle-timeout"],
});
type Flags = typeof flags;

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost)$/i;

function publicUrlFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--public-url takes an absolute URL: got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`--public-url must be http or https: got ${url.protocol}`);
  }
  return url.href;
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const { flags: f, io } = ctx;
  if (ctx.positionals.length > 0) {
    throw new UsageError(`reins serve takes no arguments: got ${ctx.positionals.join(" ")}`, {
      hint: usage,
    });
  }
  const host = f.host ?? "127.0.0.1";
  const port = f.port ?? DEFAULT_PORT;
  const maxTurns = f["max-turns"] ?? DEFAULT_MAX_TURNS;
  const graceSeconds = f.grace ?? DEFAULT_GRACE_SECONDS;
  const publicUrl = publicUrlFlag(f["public-url"]);
  const tokenFile = f["token-file"];
  if (!LOOPBACK.test(host) && tokenFile === undefined) {
    throw new UsageError(
      `reins serve will not listen on ${host} with a generated token: give one with --token-file`,
      {
        hint: "put a long random token in a file only you can read (openssl rand -base64 32 > F; " +
          "chmod 600 F), pass --token-file F, and put TLS in front (docs/serve.md)",
      },
    );
  }
  const agent = agentFlags(f, f.driver ?? "loop");
  const approval = f.approve ?? "auto";
  const timeoutSeconds = f.timeout ?? null;
  const budget = { maxTurns: f["max-calls"], maxTokens: f["max-tokens"], maxUsd: f["max-usd"] };
  const cwd = checkCwd(f.cwd ?? Deno.cwd());
  const settings = settingsWithConfine(await ctx.settings(), ctx.flags);
  // Refused at start, not at the first task, where agents cannot be confined (exit 4).
  if (settings.confine.enabled) await requireConfinement();
  // Turn after turn: the next turn's sandbox is started while this one's agent runs.
  await using _ready = settings.confine.enabled ? keepSandboxesReady({ most: maxTurns }) : null;
  using store = openStore(ctx.home, { warn: (message) => io.warn(message) });
  const token = tokenFile === undefined
    ? dataRootToken(store)
    : readTokenFile(resolvePath(tokenFile), (message) => io.warn(message));
  rememberSecrets(token.token);
  // Runs a crash left behind are settled now, so that GetTask tells the truth about them.
  await store.reconcileCheaply();

  const server = startServer({
    hostname: host,
    port,
    publicUrl,
    token: token.token,
    store,
    driver: driverNameOf(agent),
    maxTurns,
    warn: (message) => io.warn(message),
    log: (message) => io.note(`reins serve: ${new Date().toISOString()} ${message}`),
    onError: (error) =>
      io.warn(`serve: ${error instanceof Error ? error.stack ?? error.message : String(error)}`),
    runTurn: (turn, signals, hooks) =>
      runTurn(
        store,
        settings,
        {
          agent,
          prompt: turn.prompt,
          promptMessageId: turn.messageId,
          cwd,
          contextId: turn.contextId,
          approval,
          budget,
          timeoutSeconds,
          parentRunId: null,
          trigger: "a2a",
        },
        signals,
        hooks,
      ),
  });

  if (publicUrl === undefined && /^(0\.0\.0\.0|::|\[::\])$/.test(host)) {
    io.warn(
      `listening on every address: the card says ${server.url}, which clients elsewhere cannot use; give --public-url with the address they reach this server at`,
    );
  }
  // Signals are handled before the card's address is printed: whoever reads it may stop serve at
  // once, and a SIGTERM in between would end it without the graceful stop.
  const stopped = new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (name: string) => () => {
      signals++;
      if (signals === 1) {
        io.note(
          `reins serve: ${name}: no new tasks; running turns get ${graceSeconds} s to finish (again to stop them now)`,
        );
        server.shutdown(graceSeconds * 1000).then(resolve);
      } else if (signals === 2) {
        io.note(`reins serve: ${name} again: stopping the running turns now`);
        // The graceful stop under way finishes as soon as the turns it waits for are stopped.
        server.service.drain(0, 2_000);
      }
    };
    for (const name of ["SIGTERM", "SIGINT"] as const) {
      Deno.addSignalListener(name, onSignal(name));
    }
  });
  if (io.jsonMode) {
    io.json({ cardUrl: server.cardUrl, url: server.url, tokenFile: token.path, maxTurns });
  } else {
    io.print(server.cardUrl);
    io.note(
      `reins serve: A2A 1.0 on ${server.url} (${driverNameOf(agent)}, at most ${maxTurns} turn${
        maxTurns === 1 ? "" : "s"
      } at once); bearer token in ${token.path}${token.generated ? " (new)" : ""}`,
    );
  }

  await stopped;
  io.note("reins serve: stopped; every turn is recorded");
  return 0;
}
