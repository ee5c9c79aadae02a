// A turn's confinement, made once before its agent starts and closed once it has exited: the
// facts profile.ts needs (which secret stores exist to be hidden, the harness's state for this
// context, the bridges out) gathered, and a `wrap` that every spawn of the turn applies — the
// agent, the loop's run_command, a suite's shell steps. Opened early, it starts the agent's
// sandbox ahead of the agent (warm.ts), for the turn's own setup to hide its start.
import { joinPath } from "../core/paths.ts";
import { spawnGroupLeader } from "../core/process_group.ts";
import type { AllowedHost } from "./allow_host.ts";
import {
  type ConfinedNetwork,
  type ConnectionReport,
  openConfinedNetwork,
  PROXY_PORT,
} from "./network.ts";
import {
  type AgentCommand,
  type ConfinedCommand,
  confinedCommand,
  type ConfineFacts,
  releaseLine,
  sandboxAhead,
} from "./profile.ts";
import { requireConfinement } from "./probe.ts";
import { HARNESS_ENV, HARNESS_STATES, KEPT_ENV, SECRET_STORES } from "./stores.ts";
import { type ReadyOptions, ReadySandboxes } from "./ready.ts";
import { WarmSandbox } from "./warm.ts";

/** What a front end asks of a confined turn (--confine, --allow-host, the config's). */
export interface ConfineRequest {
  allowHosts: AllowedHost[];
  /** More paths to hide (absolute, or relative to $HOME): the config's `confine.hide`. */
  hide: string[];
}

/** Applied by each spawn site to the command it would run. */
export interface Confinement {
  wrap(command: AgentCommand): ConfinedCommand;
  /**
   * Starts `command` confined, as the leader of a group of its own (spawnGroupLeader), its stdout
   * and stderr piped: in the sandbox started ahead for it where there is one that fits (the
   * turn's first agent, in the working directory the sandbox was made for), else in one of its
   * own. Throws as spawnGroupLeader does.
   */
  spawn(
    command: AgentCommand,
    stdin: "null" | "piped",
  ): { child: Deno.ChildProcess; startedMs: number };
}

export interface ConfinementSetup {
  /** The data root, absolute. */
  dataRoot: string;
  /** Your $HOME: where the secret stores and your harness credentials are. */
  userHome: string;
  /** The variables that say where your harness config is (CODEX_HOME, XDG_CONFIG_HOME, …). */
  vars: Record<string, string | undefined>;
  /** The driver whose state is bound in (none for command and loop). */
  driver: string;
  /** This context's (or run's) directory for the harness's state, under the data root. */
  stateDir: string | null;
  /** A directory for the bridges' sockets, made here and removed at close. */
  socketParent: string;
  /** The model gateway's port, or null: none, or not known yet (then `attach` may give it). */
  gatewayPort: number | null;
  /** Where each proxy connection goes; absent: held until `attach` says. */
  onConnection?(report: ConnectionReport): void;
  /**
   * The working directory of the turn's agent, for a sandbox to be started ahead of it now
   * (warm.ts); absent: each spawn starts its own.
   */
  agentCwd?: string;
}

export interface OpenConfinement {
  confinement: Confinement;
  /**
   * The turn is ready to run its agent (a confinement opened before its run was made): the
   * gateway it was bound to (null: none), and where its proxy connections go from now on.
   */
  attach(turn: { gatewayPort: number | null; onConnection(report: ConnectionReport): void }): void;
  /**
   * Whether its sandbox started ahead is still there for an agent: alive, untaken, and made for
   * the gateway it has (none given since).
   */
  readonly waiting: boolean;
  /** Ends what is left: the sandbox started ahead if no agent took it, the bridges. Idempotent. */
  close(): Promise<void>;
}

/** What a turn's sandbox is made of, gathered before it is opened (facts but the network). */
interface Gathered {
  facts: Omit<ConfineFacts, "network">;
  stateEnv: Record<string, string>;
  /**
   * All that makes a sandbox started ahead what it is, as text: two with the same are the same
   * sandbox (the same working directory and harness state, by inode too, the same things hidden,
   * the same environment kept, the same proxy's allowed hosts), so a sandbox kept ready
   * (ready.ts) is handed only to a turn whose own would be made the same.
   */
  print: string;
}

/** Gathers the facts and opens the bridges; refuses (exit 4) where bubblewrap cannot work. */
export async function openConfinement(
  request: ConfineRequest,
  setup: ConfinementSetup,
): Promise<OpenConfinement> {
  await requireConfinement();
  const gathered = await gather(request, setup);
  if (setup.agentCwd === undefined || setup.onConnection !== undefined) {
    return await openGathered(request, setup, gathered, null);
  }
  // In a process that keeps sandboxes ready (ready.ts), one made the same as this turn's would be
  // is taken where there is one; whichever the agent takes, the next is started then.
  const ready = kept;
  if (ready === null || ready.closed) return await openGathered(request, setup, gathered, null);
  const prepare = (): void =>
    ready.prepare(gathered.print, () => openGathered(request, setup, gathered, prepare));
  const taken = await ready.take(gathered.print);
  if (taken === null) return await openGathered(request, setup, gathered, prepare);
  // Turn after turn: the next one's is started now, while this turn makes its run, not only once
  // its agent starts (then a no-op: there is one).
  prepare();
  return taken;
}

/** The process's sandboxes kept ready, where it keeps them (keepSandboxesReady()). */
let kept: ReadySandboxes<OpenConfinement> | null = null;

/**
 * From now on this process keeps the next turn's sandbox ready (ready.ts; the front ends that run
 * turn after turn: `reins serve`), until what it returns is closed (or disposed).
 */
export function keepSandboxesReady(options: ReadyOptions = {}): ReadySandboxes<OpenConfinement> {
  void kept?.close();
  kept = new ReadySandboxes<OpenConfinement>(options);
  return kept;
}

async function gather(request: ConfineRequest, setup: ConfinementSetup): Promise<Gathered> {
  const home = setup.userHome;
  const inHome = (path: string) => path.startsWith("/") ? path : joinPath(home, path);
  const hidden = await existing([...SECRET_STORES, ...request.hide].map(inHome));
  const binds: ConfineFacts["binds"] = [];
  const state = HARNESS_STATES[setup.driver];
  if (state && setup.stateDir !== null) {
    for (const dir of state.dirs) {
      const source = joinPath(setup.stateDir, dir);
      await Deno.mkdir(source, { recursive: true, mode: 0o700 });
      binds.push({ source, target: dir, readOnly: false });
    }
    const carried = state.carried(setup.vars, home);
    const found = new Set(
      (await existing(Object.values(carried))).flatMap((file) =>
        file.kind === "file" ? [file.path] : []
      ),
    );
    for (const [target, source] of Object.entries(carried)) {
      if (found.has(source)) binds.push({ source, target, readOnly: true });
    }
  }
  const facts = {
    dataRoot: setup.dataRoot,
    hidden,
    binds,
    keepEnv: [...KEPT_ENV, ...HARNESS_ENV[setup.driver] ?? []],
    inherited: wholeEnv(),
  };
  const stateEnv = state?.env ?? {};
  let print = "";
  if (setup.agentCwd !== undefined) {
    // The directories bound read-write, by inode as well as by path: a context forgotten and
    // made again, or a working directory replaced, is another.
    const identity = [setup.agentCwd, ...binds.filter((b) => !b.readOnly).map((b) => b.source)]
      .map((path) => {
        const info = Deno.statSync(path);
        return `${info.dev}:${info.ino}`;
      });
    print = JSON.stringify([
      setup.agentCwd,
      identity,
      setup.driver,
      stateEnv,
      // The environment by name: Deno.env.toObject()'s order is not always the same.
      { ...facts, inherited: facts.inherited && Object.entries(facts.inherited).sort() },
      request.allowHosts,
      setup.socketParent,
      proxyPortFor(setup),
    ]);
  }
  return { facts, stateEnv, print };
}

/**
 * Opens the bridges and, for a turn's agent (setup.agentCwd), starts its sandbox ahead;
 * `onTaken`: called once an agent takes that sandbox.
 */
async function openGathered(
  request: ConfineRequest,
  setup: ConfinementSetup,
  gathered: Gathered,
  onTaken: (() => void) | null,
): Promise<OpenConfinement> {
  // Synchronous, as the secret stores' look: each is a syscall or two, less than a trip to Deno's
  // blocking pool and back, which on a busy machine is the larger part of a turn's setup.
  Deno.mkdirSync(setup.socketParent, { recursive: true, mode: 0o700 });
  const socketDir = Deno.makeTempDirSync({ dir: setup.socketParent, prefix: "net-" });
  // Reports that come before the run is there to hold them (none can come from the agent: it
  // does not run yet) wait for `attach`.
  const held: ConnectionReport[] = [];
  let onConnection = setup.onConnection ?? ((report: ConnectionReport) => void held.push(report));
  const inside = { socketDir, gatewayPort: setup.gatewayPort, proxyPort: proxyPortFor(setup) };
  let facts: ConfineFacts = { ...gathered.facts, network: inside };
  const stateEnv = gathered.stateEnv;
  const withState = (command: AgentCommand): AgentCommand => ({
    ...command,
    env: { ...command.env, ...stateEnv },
  });
  // Started before the bridges outside are opened: the sandbox waits for their sockets itself.
  let warm = setup.agentCwd === undefined
    ? null
    : WarmSandbox.start(sandboxAhead(setup.agentCwd, facts));
  const warmGateway = setup.gatewayPort;
  let network: ConfinedNetwork;
  try {
    network = await openConfinedNetwork({
      socketDir,
      gatewayPort: setup.gatewayPort,
      allowHosts: request.allowHosts,
      onConnection: (report) => onConnection(report),
    });
  } catch (error) {
    await warm?.discard();
    removeQuietly(socketDir);
    throw error;
  }
  const discarded: Promise<void>[] = [];
  let closed: Promise<void> | null = null;
  return {
    confinement: {
      wrap: (command) => confinedCommand(withState(command), facts),
      spawn(command, stdin) {
        const agent = withState(command);
        if (warm?.available && warm.cwd === agent.cwd) {
          const line = releaseLine(agent, facts, {
            stdin,
            gatewayPort: facts.network?.gatewayPort === warmGateway
              ? null
              : facts.network?.gatewayPort ?? null,
          });
          const child = line === null ? null : warm.take(line, stdin);
          if (child !== null) {
            // The next turn's, once this agent is on its way (ready.ts).
            if (onTaken !== null) setTimeout(onTaken, 0);
            return { child, startedMs: warm.startedMs };
          }
        }
        const confined = confinedCommand(agent, facts);
        const child = spawnGroupLeader(confined.program, {
          args: confined.args,
          cwd: confined.cwd,
          env: confined.env,
          clearEnv: confined.clearEnv,
          stdin,
          stdout: "piped",
          stderr: "piped",
        });
        return { child, startedMs: Date.now() };
      },
    },
    get waiting() {
      return warm?.available === true && facts.network?.gatewayPort === warmGateway;
    },
    attach(turn) {
      onConnection = turn.onConnection;
      for (const report of held.splice(0)) onConnection(report);
      // A gateway given at the open is bridged already.
      if (turn.gatewayPort === null || facts.network?.gatewayPort !== null) return;
      network.bridgeGateway(turn.gatewayPort);
      let proxyPort = facts.network.proxyPort;
      if (turn.gatewayPort === proxyPort) {
        // The sandbox started ahead listens for the proxy where the gateway is to be: it cannot
        // be the agent's, and the agent's own sandbox has the proxy one port on.
        proxyPort = (proxyPort ?? 0) + 1;
        if (warm !== null) discarded.push(warm.discard());
        warm = null;
      }
      facts = { ...facts, network: { ...facts.network, gatewayPort: turn.gatewayPort, proxyPort } };
    },
    close() {
      closed ??= (async () => {
        await Promise.all([warm?.discard(), ...discarded]);
        await network.close();
        removeQuietly(socketDir);
      })();
      return closed;
    },
  };
}

function removeQuietly(dir: string): void {
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch {
    // gone already
  }
}

/** The loopback port the proxy is bridged to inside: not the gateway's. */
function proxyPortFor(setup: ConfinementSetup): number {
  return setup.gatewayPort === PROXY_PORT ? PROXY_PORT + 1 : PROXY_PORT;
}

/**
 * Which of `paths` exist, and of what kind. Where this process may not look at them (the
 * binary's sandbox does not let reins read your secret stores), `ls -d` says which exist.
 */
async function existing(paths: string[]): Promise<ConfineFacts["hidden"]> {
  const found: ConfineFacts["hidden"] = [];
  const unknown: string[] = [];
  for (const path of paths) {
    try {
      const info = Deno.lstatSync(path);
      found.push({ path, kind: info.isDirectory ? "dir" : "file" });
    } catch (error) {
      if (error instanceof Deno.errors.NotCapable) unknown.push(path);
      else if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  if (unknown.length === 0) return found;
  const listed = await new Deno.Command("ls", {
    args: ["-d", "-p", "--", ...unknown],
    stdout: "piped",
    stderr: "null",
  }).output();
  for (const line of new TextDecoder().decode(listed.stdout).split("\n")) {
    if (line === "") continue;
    found.push(
      line.endsWith("/") ? { path: line.slice(0, -1), kind: "dir" } : { path: line, kind: "file" },
    );
  }
  return found;
}

/** reins's whole environment, or null where this process may read only its own variables. */
function wholeEnv(): Record<string, string> | null {
  try {
    return Deno.env.toObject();
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) return null;
    throw error;
  }
}
