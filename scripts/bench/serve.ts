// `reins serve` under load: requests per second for GetTask and for SendMessage (the command
// driver running `true`), 16 clients on kept-alive connections, against a bare Deno.serve that
// answers the same JSON; SendMessage against @a2a-js/sdk's Express server whose executor spawns
// the same program and fdatasyncs a journal per task (_a2a_peer.ts: the least a durable A2A
// server starting agents does); and SendMessage against the same turns run by runTurn() in process,
// which is what a recorded turn costs without HTTP; the memory 500 idle connections cost each;
// and how fast a megabyte of `[` is refused. Both servers are subprocesses; the load comes from
// this process over raw sockets (the same client for both), so the ratio compares the servers,
// not the clients; each pair is measured in alternating rounds, so that other work on the machine
// weighs on both sides of a ratio alike.
import { cacheModules, compare, figure, withDenoCache } from "./_lib.ts";
import { sourceRunFlags } from "../permissions.ts";
import { loadSettings } from "../../lib/core/config.ts";
import { newId } from "../../lib/core/ids.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const CLIENTS = 16;
const SECONDS = 3;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Server {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** Starts a server subprocess whose first stdout line holds its URL (or its port). */
async function start(args: string[], env: Record<string, string>): Promise<Server> {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Kept for a failure to start; drained so a server that writes much never blocks.
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the server exited before listening: ${out}${await stderr}`);
    out += value;
  }
  reader.releaseLock();
  const port = Number(/:(\d+)/.exec(out)?.[1] ?? out.trim());
  return {
    port,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await stderr;
    },
  };
}

function request(body: string, token: string): Uint8Array {
  return encoder.encode(
    `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
      `authorization: Bearer ${token}\r\na2a-version: 1.0\r\n` +
      `content-length: ${encoder.encode(body).length}\r\n\r\n${body}`,
  );
}

/** One kept-alive connection: send, read one Content-Length-framed answer, repeat. */
class Connection {
  readonly #conn: Deno.Conn;
  readonly #buffer = new Uint8Array(256 * 1024);
  #have = 0;
  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }
  static async open(port: number): Promise<Connection> {
    return new Connection(await Deno.connect({ hostname: "127.0.0.1", port }));
  }
  /** Writes `bytes`, reading nothing. */
  async send(bytes: Uint8Array): Promise<void> {
    let written = 0;
    while (written < bytes.length) written += await this.#conn.write(bytes.subarray(written));
  }
  async exchange(bytes: Uint8Array): Promise<string> {
    await this.send(bytes);
    while (true) {
      const text = decoder.decode(this.#buffer.subarray(0, this.#have));
      const end = text.indexOf("\r\n\r\n");
      if (end >= 0) {
        const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
        const total = end + 4 + length;
        if (this.#have >= total) {
          const body = text.slice(end + 4, total);
          this.#buffer.copyWithin(0, total, this.#have);
          this.#have -= total;
          return body;
        }
      }
      const n = await this.#conn.read(this.#buffer.subarray(this.#have));
      if (n === null) throw new Error("the server closed the connection");
      this.#have += n;
    }
  }
  close(): void {
    this.#conn.close();
  }
}

/** A load of CLIENTS concurrent clients: `run` goes on until the time given, counting answers. */
interface Load {
  run(untilMs: number): Promise<number>;
  close(): void;
  /** The server process answering it, whose CPU time paired() counts. */
  pid?: number;
}

/**
 * The CPU time in ms process `pid` has used itself (user + system, not its children's), from
 * /proc/<pid>/stat in clock ticks of 10 ms (Linux's USER_HZ).
 */
function cpuMs(pid: number): number {
  const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CLIENTS kept-alive connections sending `bytes`, each waiting for its answer. */
async function httpLoad(port: number, bytes: Uint8Array, pid?: number): Promise<Load> {
  const connections = await Promise.all(
    Array.from({ length: CLIENTS }, () => Connection.open(port)),
  );
  return {
    async run(untilMs) {
      let count = 0;
      await Promise.all(connections.map(async (c) => {
        while (performance.now() < untilMs) {
          await c.exchange(bytes);
          count++;
        }
      }));
      return count;
    },
    close() {
      for (const c of connections) c.close();
    },
    pid,
  };
}

/** The CPU time (ms) a load's server spent per answer, when its server's pid is known. */
const cpuPerAnswer = new Map<Load, number>();

/**
 * The rates (per second) of two loads, measured in alternating rounds (A B B A …) after a warm-up
 * of each: on a machine shared with other work, a busy spell then weighs on both sides alike
 * rather than on whichever ran during it. The CPU time each server spent in its own rounds, per
 * answer, is left in cpuPerAnswer.
 */
async function paired(a: Load, b: Load): Promise<[number, number]> {
  const ROUNDS = 4;
  const roundMs = (SECONDS * 1000) / ROUNDS;
  for (const load of [a, b]) await load.run(performance.now() + 500);
  const counts = [0, 0];
  const times = [0, 0];
  const cpu = [0, 0];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const side of order) {
      const load = [a, b][side];
      const cpuBefore = load.pid === undefined ? 0 : cpuMs(load.pid);
      const start = performance.now();
      counts[side] += await load.run(start + roundMs);
      times[side] += performance.now() - start;
      if (load.pid !== undefined) cpu[side] += cpuMs(load.pid) - cpuBefore;
    }
  }
  [a, b].forEach((load, side) => {
    if (load.pid !== undefined) cpuPerAnswer.set(load, cpu[side] / counts[side]);
  });
  return [counts[0] / (times[0] / 1000), counts[1] / (times[1] / 1000)];
}

function rssKiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))![1]);
}

/** RSS growth in KiB per connection with 500 kept-alive idle connections (each asked once). */
async function idleCost(server: Server, bytes: Uint8Array): Promise<number> {
  const warm = await Connection.open(server.port);
  for (let i = 0; i < 200; i++) await warm.exchange(bytes);
  warm.close();
  await new Promise((r) => setTimeout(r, 300));
  const before = rssKiB(server.pid);
  const connections: Connection[] = [];
  for (let i = 0; i < 500; i++) {
    const c = await Connection.open(server.port);
    await c.exchange(bytes);
    connections.push(c);
  }
  await new Promise((r) => setTimeout(r, 300));
  const after = rssKiB(server.pid);
  for (const c of connections) c.close();
  return Math.max(1, after - before) / 500;
}

const CHUNKED_CONNECTIONS = 8;

/**
 * How many bytes sent on loopback connections to `port` their server has not read yet: the
 * server sides' receive queues plus the client sides' send queues, from /proc/net/tcp (rx_queue
 * and tx_queue of each established connection), and how many server sides there are.
 */
function unreadOnLoopback(port: number): { unread: number; serverSides: number } {
  let unread = 0;
  let serverSides = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 5 || fields[3] !== "01") continue; // established only
      const localPort = parseInt(fields[1].split(":").at(-1)!, 16);
      const remotePort = parseInt(fields[2].split(":").at(-1)!, 16);
      const [tx, rx] = fields[4].split(":").map((hex) => parseInt(hex, 16));
      if (localPort === port) {
        serverSides++;
        unread += rx;
      } else if (remotePort === port) {
        unread += tx;
      }
    }
  }
  return { unread, serverSides };
}

/**
 * Waits until `count` connections to the server are open and it has read every byte sent on
 * them (nothing left in the kernel's queues on either side): then each body is in the server's
 * hands, whichever way it reads. Throws when that takes longer than `timeoutMs`.
 */
async function untilAllRead(port: number, count: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (true) {
    const { unread, serverSides } = unreadOnLoopback(port);
    if (serverSides >= count && unread === 0) return;
    if (performance.now() > deadline) {
      throw new Error(
        `the server on port ${port} had not read ${unread} bytes of its ${count} bodies after ${timeoutMs} ms`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * RSS growth in KiB per connection with CHUNKED_CONNECTIONS bodies of one-byte chunks being read
 * at once (each ~170k chunks, short of serve's cap + slack, the request ListTasks padded with
 * blanks), measured once the server has read every byte sent on all of them (the last chunk not
 * sent yet): each server is sampled with every body in hand, however fast it reads, rather than
 * after a fixed wait that a slower reader may not have finished in. Then each is ended and
 * answered.
 */
async function chunkedBodyCost(
  server: Server,
  token: string,
  count = CHUNKED_CONNECTIONS,
): Promise<number> {
  const rpc = '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}';
  const text = rpc + " ".repeat(170_000 - rpc.length);
  const head = encoder.encode(
    `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
      `authorization: Bearer ${token}\r\na2a-version: 1.0\r\ntransfer-encoding: chunked\r\n\r\n` +
      [...text].map((c) => `1\r\n${c}\r\n`).join(""),
  );
  // One body first, as the idle measure warms up: what is compiled once is not per connection.
  const warm = await Connection.open(server.port);
  await warm.exchange(new Uint8Array([...head, ...encoder.encode("0\r\n\r\n")]));
  warm.close();
  await new Promise((r) => setTimeout(r, 300));
  const before = rssKiB(server.pid);
  const connections: Connection[] = [];
  for (let i = 0; i < count; i++) {
    const c = await Connection.open(server.port);
    await c.send(head);
    connections.push(c);
  }
  await untilAllRead(server.port, count, 60_000);
  const after = rssKiB(server.pid);
  for (const c of connections) {
    await c.exchange(encoder.encode("0\r\n\r\n"));
    c.close();
  }
  return Math.max(1, after - before) / count;
}

/** Turns of `true` on the command driver, CLIENTS at once, straight through runTurn(). */
function turnLoad(home: string, cwd: string): Load {
  const store = openStore(home);
  const settings = loadSettings({ REINS_HOME: home, HOME: cwd, REINS_CONFIG: `${cwd}/none.json` });
  const signals = { stop: new AbortController().signal, kill: new AbortController().signal };
  const turn = () =>
    runTurn(store, settings, {
      agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
      prompt: "hi",
      cwd,
      contextId: newId(),
      approval: "auto",
      budget: {},
      timeoutSeconds: null,
      parentRunId: null,
      trigger: "a2a",
    }, signals);
  return {
    async run(untilMs) {
      let count = 0;
      await Promise.all(Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < untilMs) {
          await turn();
          count++;
        }
      }));
      return count;
    },
    close() {
      store.close();
    },
  };
}

export default async function (): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-serve-" }));
  const servers: Server[] = [];
  try {
    // Each side gets an empty working directory of its own: a turn snapshots its working
    // directory before the agent starts, and must not walk the other side's data root.
    const home = `${dir}/home`;
    const work = `${dir}/work-serve`;
    await Deno.mkdir(work);
    const flags = sourceRunFlags({
      home,
      cwd: work,
      netHosts: [],
      programs: ["true"],
    });
    await cacheModules(CONFIG, MAIN);
    const startOurs = () =>
      start(
        [
          "run",
          "--quiet",
          "--config",
          CONFIG,
          ...flags,
          MAIN,
          "serve",
          "--port",
          "0",
          "--driver",
          "command",
          "--exec",
          "true",
          "--max-turns",
          String(CLIENTS),
          "--cwd",
          work,
        ],
        withDenoCache({
          REINS_HOME: home,
          HOME: dir,
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        }),
      );
    const ours = await startOurs();
    servers.push(ours);
    const token = (await Deno.readTextFile(`${home}/serve.token`)).trim();
    const send = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "hi" }] } },
    });
    const probe = await Connection.open(ours.port);
    const sent = JSON.parse(await probe.exchange(request(send, token)));
    const taskId = sent.result.task.id as string;
    const get = request(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: taskId } }),
      token,
    );
    const getAnswer = await probe.exchange(get);
    const sendAnswer = JSON.stringify(sent);
    probe.close();

    // The baseline: Deno.serve answering each POST with the same JSON text, reading its body.
    const startBare = () =>
      start([
        "run",
        "--quiet",
        "--allow-net=127.0.0.1",
        "--allow-env=BENCH_ANSWERS",
        new URL("./_bare_server.ts", import.meta.url).pathname,
      ], { BENCH_ANSWERS: JSON.stringify({ GetTask: getAnswer, SendMessage: sendAnswer }) });
    const bare = await startBare();
    servers.push(bare);

    const loads: Load[] = [];
    const load = <T extends Load>(l: T) => (loads.push(l), l);
    const [getOurs, getBare] = await paired(
      load(await httpLoad(ours.port, get)),
      load(await httpLoad(bare.port, get)),
    );
    compare({
      name: "GetTask, 16 clients (auth, JSON-RPC, task from the recorded run)",
      ours: getOurs,
      baseline: getBare,
      unit: "req/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "bare Deno.serve, same JSON",
    });
    const sendLoad = load(await httpLoad(ours.port, request(send, token), ours.pid));
    const [sendOurs, sendBare] = await paired(
      sendLoad,
      load(await httpLoad(bare.port, request(send, token))),
    );
    compare({
      name: "SendMessage, 16 clients (a recorded run of `true` each, blocking)",
      ours: sendOurs,
      baseline: sendBare,
      unit: "req/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "bare Deno.serve, same JSON",
    });

    // The peer: the SDK's own server doing the least of the same work (spawn, durable journal).
    const PEER = new URL("./_a2a_peer.ts", import.meta.url).pathname;
    await cacheModules(CONFIG, PEER);
    const peer = await start([
      "run",
      "--quiet",
      "--config",
      CONFIG,
      "--allow-all",
      PEER,
      `${dir}/peer-journal.jsonl`,
      "true",
    ], withDenoCache({ HOME: dir, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" }));
    servers.push(peer);
    const peerProbe = await Connection.open(peer.port);
    const peerAnswer = JSON.parse(await peerProbe.exchange(request(send, token)));
    peerProbe.close();
    if (peerAnswer.result?.task?.status?.state !== "TASK_STATE_COMPLETED") {
      throw new Error(`the @a2a-js/sdk peer answered ${JSON.stringify(peerAnswer)}`);
    }
    const peerLoad = load(await httpLoad(peer.port, request(send, token), peer.pid));
    const [sendVsPeer, peerRate] = await paired(sendLoad, peerLoad);
    compare({
      name: "SendMessage, 16 clients, command agent `true` (a recorded, durable run each)",
      ours: sendVsPeer,
      baseline: peerRate,
      unit: "req/s",
      better: "higher",
      goal: ">= 1.0",
      baselineName:
        "@a2a-js/sdk 1.3.0 on Express 5.1.0, its executor spawning true and fdatasyncing a journal per task",
    });
    // Where the difference lies: the server process's own CPU time per task (its agents' not
    // counted), in the same rounds. reins's is nearly all the turn's (docs/serve.md, Speed).
    figure(
      "CPU time of the server process per SendMessage, same rounds (reins serve / @a2a-js/sdk peer)",
      `${cpuPerAnswer.get(sendLoad)!.toFixed(2)} ms / ${cpuPerAnswer.get(peerLoad)!.toFixed(2)} ms`,
    );

    // What the turns themselves cost, without HTTP: runTurn() in this process, 16 at once.
    await Deno.mkdir(`${dir}/work-engine`);
    const [sendAgain, engineRate] = await paired(
      sendLoad,
      load(turnLoad(`${dir}/engine-home`, `${dir}/work-engine`)),
    );
    for (const l of loads) l.close();
    compare({
      name: "SendMessage, 16 clients, against the same turns run by runTurn() in process",
      ours: sendAgain,
      baseline: engineRate,
      unit: "turns/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "runTurn(), 16 at once",
    });

    // On fresh servers: the load above left garbage whose collection would hide the growth.
    const freshOurs = await startOurs();
    servers.push(freshOurs);
    const oursIdle = await idleCost(freshOurs, get);
    const freshBare = await startBare();
    servers.push(freshBare);
    const bareIdle = await idleCost(freshBare, get);
    compare({
      name: "memory per idle kept-alive connection (500 open)",
      ours: oursIdle,
      baseline: bareIdle,
      unit: "KiB",
      better: "lower",
      goal: "<= 2",
      baselineName: "bare Deno.serve",
    });

    // regression: each one-byte chunk of a body was an array of its own, ~80 MB a connection.
    const chunkedOurs = await startOurs();
    servers.push(chunkedOurs);
    const oursChunked = await chunkedBodyCost(chunkedOurs, token);
    const chunkedBare = await startBare();
    servers.push(chunkedBare);
    const bareChunked = await chunkedBodyCost(chunkedBare, token);
    compare({
      name:
        `memory per connection reading a body of 170k one-byte chunks (${CHUNKED_CONNECTIONS} at once)`,
      ours: oursChunked,
      baseline: bareChunked,
      unit: "KiB",
      better: "lower",
      goal: "<= 2",
      baselineName: "bare Deno.serve reading the same",
    });

    // How long a megabyte of '[' takes to be refused: sending it, and the answer.
    const brackets = "[".repeat(1_000_000);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await Connection.open(ours.port);
      const bytes = request(brackets, token);
      const startAt = performance.now();
      const answer = JSON.parse(await c.exchange(bytes));
      times.push(performance.now() - startAt);
      c.close();
      if (answer.error?.code !== -32600) throw new Error(`unexpected answer ${answer}`);
    }
    times.sort((a, b) => a - b);
    figure(
      "a megabyte of '[' refused (-32600), from the first byte sent to the answer, median of 5 (goal < 100 ms)",
      `${times[2].toFixed(1)} ms`,
    );
  } finally {
    for (const server of servers) await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
