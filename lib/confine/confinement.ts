// A turn's confinement, made once before its agent starts and closed once it has exited: the
// facts profile.ts needs (which secret stores exist to be hidden, the harness's state for this
// context, the bridges out) gathered, and a `wrap` that every spawn of the turn applies — the
// agent, the loop's run_command, a suite's shell steps.
import { joinPath } from "../core/paths.ts";
import type { AllowedHost } from "./allow_host.ts";
import { type ConnectionReport, openConfinedNetwork } from "./network.ts";
import {
  type AgentCommand,
  type ConfinedCommand,
  confinedCommand,
  type ConfineFacts,
} from "./profile.ts";
import { requireConfinement } from "./probe.ts";
import { HARNESS_ENV, HARNESS_STATES, KEPT_ENV, SECRET_STORES } from "./stores.ts";

/** What a front end asks of a confined turn (--confine, --allow-host, the config's). */
export interface ConfineRequest {
  allowHosts: AllowedHost[];
  /** More paths to hide (absolute, or relative to $HOME): the config's `confine.hide`. */
  hide: string[];
}

/** Applied by each spawn site to the command it would run. */
export interface Confinement {
  wrap(command: AgentCommand): ConfinedCommand;
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
  gatewayPort: number | null;
  onConnection(report: ConnectionReport): void;
}

export interface OpenConfinement {
  confinement: Confinement;
  close(): Promise<void>;
}

/** Gathers the facts and opens the bridges; refuses (exit 4) where bubblewrap cannot work. */
export async function openConfinement(
  request: ConfineRequest,
  setup: ConfinementSetup,
): Promise<OpenConfinement> {
  await requireConfinement();
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
  await Deno.mkdir(setup.socketParent, { recursive: true, mode: 0o700 });
  const socketDir = await Deno.makeTempDir({ dir: setup.socketParent, prefix: "net-" });
  const network = await openConfinedNetwork({
    socketDir,
    gatewayPort: setup.gatewayPort,
    allowHosts: request.allowHosts,
    onConnection: setup.onConnection,
  });
  const facts: ConfineFacts = {
    dataRoot: setup.dataRoot,
    hidden,
    binds,
    keepEnv: [...KEPT_ENV, ...HARNESS_ENV[setup.driver] ?? []],
    inherited: wholeEnv(),
    network: { socketDir, gatewayPort: network.gatewayPort, proxyPort: network.proxyPort },
  };
  const stateEnv = state?.env ?? {};
  return {
    confinement: {
      wrap: (command) =>
        confinedCommand({ ...command, env: { ...command.env, ...stateEnv } }, facts),
    },
    async close() {
      await network.close();
      await Deno.remove(socketDir, { recursive: true }).catch(() => {});
    },
  };
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
      const info = await Deno.lstat(path);
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
