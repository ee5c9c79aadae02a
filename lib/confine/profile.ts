// The confinement profile: an agent's command line turned into the command line that runs it
// under bubblewrap (docs/confinement.md). Pure: it is given every fact (what exists, where the
// state of the context is, which ports the bridges listen on) and touches nothing; the spawn site
// applies what it returns, and network.ts sets up what the sockets it names lead to.
import { BWRAP_BASE } from "./probe.ts";

/** Where the sandbox's own directories are, inside it (all under its private /tmp). */
export const INSIDE = {
  /** The agent's $HOME: a directory of its own, its harness's state bound into it. */
  home: "/tmp/.reins-home",
  /** The Unix sockets of the bridges out (network.ts), bound read-only. */
  sockets: "/tmp/.reins-net",
} as const;

export const GATEWAY_SOCKET = "gateway.sock";
export const PROXY_SOCKET = "proxy.sock";
/**
 * The queue each bridge's socat listens with (its own default is 5): a burst of connections past
 * it lost SYNs and waited the kernel's 1 s retransmit (62 of 100 at once; 1 in 5 bursts of 16, as
 * npm's 15 sockets through the proxy make). The kernel caps it at net.core.somaxconn (4096).
 */
export const BRIDGE_BACKLOG = 511;

/** The command as the spawn site would run it unconfined. */
export interface AgentCommand {
  program: string;
  args: string[];
  cwd: string;
  /** What reins sets for the agent, on top of what it keeps of its own environment. */
  env: Record<string, string>;
}

/** The facts of one confined spawn. */
export interface ConfineFacts {
  /** The data root: not there at all inside (an empty directory where it was). */
  dataRoot: string;
  /** Paths that exist and are hidden: a directory becomes empty, a file empty. */
  hidden: { path: string; kind: "dir" | "file" }[];
  /**
   * Bound into the agent's home, relative to it: the harness's state read-write from the
   * context's directory, its credentials read-only from yours.
   */
  binds: { source: string; target: string; readOnly: boolean }[];
  /** Variables of reins's environment the agent keeps (a trailing `*`: a prefix). */
  keepEnv: string[];
  /**
   * reins's environment, where this process may read it whole (--allow-all): trimmed here, and the
   * agent spawned with exactly what it keeps. null (the binary's sandbox lets reins read only its
   * own variables): the sandbox trims it inside, before the agent starts.
   */
  inherited: Record<string, string> | null;
  /**
   * The bridges out: the directory (outside) holding the sockets, and the loopback port each is
   * bridged to inside (null: none). Absent: the agent has no network but its own loopback.
   */
  network: { socketDir: string; gatewayPort: number | null; proxyPort: number | null } | null;
}

/**
 * What to spawn instead. With `clearEnv`, `env` is the whole environment; without, it is added to
 * reins's, which the sandbox trims inside.
 */
export interface ConfinedCommand {
  program: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  clearEnv: boolean;
}

/**
 * The script the sandbox runs first, as `sh -c SCRIPT reins-confine GATEWAY_PORT PROXY_PORT
 * [PROGRAM ARGS…]`: it drops what the agent is not to keep of the environment, starts the
 * bridges (socat, each in a session of its own so that the signals that stop the agent's group
 * leave them be until the agent is gone) both at once, waits until both listen and the sockets
 * they lead to are there (the agent's first connection must find them; a start of socat is the
 * larger part of a bridge's cost, and starts paid side by side — the two inside, and outside,
 * where socat makes the sockets, the sandbox's own start — cost about one), then becomes the
 * agent. Given no program (a sandbox started ahead of its agent: warm.ts), it then reads one line
 * on its stdin (releaseLine()), runs it, and becomes the program the line named; at the end of
 * stdin instead (reins let the sandbox go unused), it exits.
 */
export const INNER_SCRIPT = `set -f
# The environment's names from the shell's own \`export -p\` (no program started): one a line
# beginning "export "; a value's later lines may look like one too, which only names one more to
# drop. The script's own variables are skipped, then dropped (no kept name is lower case).
if [ -n "\${REINS_CONFINE_KEEP+set}" ]; then
  keep=$REINS_CONFINE_KEEP
  unset REINS_CONFINE_KEEP
  IFS='
'
  for line in $(export -p); do
    unset IFS
    case $line in "export "*) ;; *) continue ;; esac
    name=\${line#export }
    name=\${name%%=*}
    case $name in keep | kept | line | name | pattern) continue ;; esac
    kept=
    for pattern in $keep; do case $name in $pattern) kept=1; break;; esac; done
    [ -n "$kept" ] || unset "$name" 2>/dev/null || true
  done
  unset IFS keep kept line name pattern
fi
# The bridges, started together (each socat in a session of its own), then waited for together.
waiting=
bridge() {
  setsid socat "TCP-LISTEN:$1,bind=127.0.0.1,reuseaddr,fork,backlog=${BRIDGE_BACKLOG}" "UNIX-CONNECT:$2" </dev/null >/dev/null 2>&1 &
  # The port as /proc/net/tcp writes it (four hex digits), without a subshell.
  n=$1 hex=
  for i in 1 2 3 4; do
    d=$((n % 16))
    n=$((n / 16))
    case $d in 10) d=A ;; 11) d=B ;; 12) d=C ;; 13) d=D ;; 14) d=E ;; 15) d=F ;; esac
    hex=$d$hex
  done
  waiting="$waiting $1:$hex:$2"
}
# Until each listens, and the socket it leads to is there (socat outside may still be making it):
# /proc/net/tcp read with the shell's builtins, a 2 ms sleep between looks.
await_bridges() {
  tries=0
  while [ -n "$waiting" ]; do
    left=
    for each in $waiting; do
      rest=\${each#*:}
      found=
      if [ -S "\${rest#*:}" ]; then
        while read -r line; do
          case $line in *": 0100007F:\${rest%%:*} 00000000:0000 0A"*) found=1; break ;; esac
        done </proc/net/tcp
      fi
      [ -n "$found" ] || left="$left $each"
    done
    waiting=$left
    [ -n "$waiting" ] || break
    tries=$((tries + 1))
    if [ $tries -gt 2500 ]; then
      for each in $waiting; do
        echo "reins: the sandbox's bridge from 127.0.0.1:\${each%%:*} to \${each##*:} did not start (is socat installed?)" >&2
      done
      exit 125
    fi
    sleep 0.002
  done
}
[ "$1" = 0 ] || bridge "$1" ${INSIDE.sockets}/${GATEWAY_SOCKET}
[ "$2" = 0 ] || bridge "$2" ${INSIDE.sockets}/${PROXY_SOCKET}
await_bridges
shift 2
if [ $# = 0 ]; then
  IFS= read -r line || exit 125
  nl='
'
  eval "$line"
fi
exec "$@"`;

/** The directories of the system a confined agent has no use for and should not reach. */
const EMPTIED = ["/tmp", "/run"];

function under(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/**
 * The command that runs `command` confined. bubblewrap is started through `env
 * --ignore-signal=INT --ignore-signal=TERM`: its outer process would otherwise die of the SIGINT
 * that asks the agent to stop, and take the sandbox with it at once (--die-with-parent), with no
 * grace; inside, `env --default-signal` gives the agent the signals back. There is no
 * --new-session: the agent must stay in the process group reins signals, and it is in a session
 * of its own already, as reins starts every agent as a session leader (process_group.ts).
 */
export function confinedCommand(command: AgentCommand, facts: ConfineFacts): ConfinedCommand {
  const args = [...sandboxArgs(command.cwd, facts), command.program, ...command.args];
  const env = agentEnv(command, facts);
  if (facts.inherited === null) {
    env.REINS_CONFINE_KEEP = [...new Set([...facts.keepEnv, ...Object.keys(env)])].join(" ");
    return { program: "env", args, cwd: command.cwd, env, clearEnv: false };
  }
  return {
    program: "env",
    args,
    cwd: command.cwd,
    env: { ...kept(facts.inherited, facts.keepEnv), ...env },
    clearEnv: true,
  };
}

/**
 * A sandbox started ahead of its agent (warm.ts): the same bubblewrap, the same setup inside (the
 * environment trimmed, the bridges started and waited for), but no program: the inner script then
 * reads on its stdin the line releaseLine() makes, and becomes what it names. Its environment is
 * what the agent keeps of reins's; what reins sets for the agent comes with the line.
 */
export function sandboxAhead(cwd: string, facts: ConfineFacts): ConfinedCommand {
  const args = sandboxArgs(cwd, facts);
  if (facts.inherited === null) {
    const env = { REINS_CONFINE_KEEP: facts.keepEnv.join(" ") };
    return { program: "env", args, cwd, env, clearEnv: false };
  }
  return { program: "env", args, cwd, env: kept(facts.inherited, facts.keepEnv), clearEnv: true };
}

/** The longest line releaseLine() makes: the shell reads it a byte at a time (~1 ms a KiB). */
export const RELEASE_LINE_LIMIT = 8 * 1024;

/**
 * The one line a sandbox started ahead (sandboxAhead) reads to become `command`: shell words,
 * each single-quoted (a newline in one carried by `$nl`), that start the gateway's bridge (and
 * wait for it) where the gateway was not known at the start, give the agent /dev/null for stdin
 * unless it is to read reins's, name the program, and export what reins sets for it; as bytes.
 * null where the line cannot carry the command: a variable's name the shell cannot export, or
 * longer than RELEASE_LINE_LIMIT (then the agent gets a sandbox of its own, confinedCommand()).
 */
export function releaseLine(
  command: AgentCommand,
  facts: ConfineFacts,
  options: { stdin: "null" | "piped"; gatewayPort: number | null },
): Uint8Array | null {
  const words: string[] = [];
  if (options.gatewayPort !== null) {
    words.push(
      `bridge ${shellWord(String(options.gatewayPort))} ${
        shellWord(`${INSIDE.sockets}/${GATEWAY_SOCKET}`)
      }`,
      "await_bridges",
    );
  }
  if (options.stdin === "null") words.push("exec </dev/null");
  words.push(`set -- ${[command.program, ...command.args].map(shellWord).join(" ")}`);
  // Exported last, once the script's own variables are no longer used; `nl` last of all, as the
  // words before it may need the newline it holds.
  const env = Object.entries(agentEnv(command, facts));
  env.sort(([a], [b]) => Number(a === "nl") - Number(b === "nl"));
  for (const [name, value] of env) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return null;
    words.push(`export ${shellWord(`${name}=${value}`)}`);
  }
  const line = words.join("; ");
  const bytes = new TextEncoder().encode(`${line}\n`);
  return bytes.length > RELEASE_LINE_LIMIT ? null : bytes;
}

/** `text` as one word of the inner script's `eval`: single-quoted, newlines as `$nl`. */
function shellWord(text: string): string {
  return `'${text.replaceAll("'", `'\\''`).replaceAll("\n", `'"$nl"'`)}'`;
}

/** bubblewrap and its arguments, up to the inner script and its two ports: all but the program. */
function sandboxArgs(cwd: string, facts: ConfineFacts): string[] {
  const args = [
    "--ignore-signal=INT",
    "--ignore-signal=TERM",
    "bwrap",
    ...BWRAP_BASE,
  ];
  for (const dir of EMPTIED) args.push("--tmpfs", dir);
  // The data root goes (an empty directory where it was), the working directory stays: a
  // suite's working copy is in the data root's tmp/, so whichever holds the other is mounted first.
  const gone = (path: string) => EMPTIED.some((dir) => under(path, dir));
  // Empty and read-only (nothing written there inside could be mistaken for the data root's),
  // made read-only only once the working directory's mount point is made in it, when it is there.
  const hidesRoot = !gone(facts.dataRoot);
  const bindCwd = ["--bind", cwd, cwd];
  if (hidesRoot && under(cwd, facts.dataRoot)) {
    args.push("--tmpfs", facts.dataRoot, ...bindCwd, "--remount-ro", facts.dataRoot);
  } else {
    args.push(...bindCwd);
    if (hidesRoot) args.push("--tmpfs", facts.dataRoot, "--remount-ro", facts.dataRoot);
  }
  for (const { path, kind } of facts.hidden) {
    if (gone(path) && !under(path, cwd)) continue;
    if (kind === "dir") args.push("--tmpfs", path, "--remount-ro", path);
    else args.push("--ro-bind", "/dev/null", path);
  }
  args.push("--dir", INSIDE.home);
  for (const bind of facts.binds) {
    args.push(bind.readOnly ? "--ro-bind" : "--bind", bind.source, `${INSIDE.home}/${bind.target}`);
  }
  if (facts.network !== null) args.push("--ro-bind", facts.network.socketDir, INSIDE.sockets);
  args.push(
    "--chdir",
    cwd,
    "--",
    "env",
    "--default-signal=INT,TERM",
    "sh",
    "-c",
    INNER_SCRIPT,
    "reins-confine",
    String(facts.network?.gatewayPort ?? 0),
    String(facts.network?.proxyPort ?? 0),
  );
  return args;
}

/** What reins sets for the agent inside: its own variables, the sandbox's home, the proxy's. */
function agentEnv(command: AgentCommand, facts: ConfineFacts): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(command.env)) {
    env[name] = value.startsWith("~/") ? `${INSIDE.home}${value.slice(1)}` : value;
  }
  env.HOME = INSIDE.home;
  env.TMPDIR = "/tmp";
  const proxyPort = facts.network?.proxyPort ?? null;
  if (proxyPort !== null) {
    const proxy = `http://127.0.0.1:${proxyPort}`;
    for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"]) {
      env[name] = proxy;
    }
    env.NO_PROXY = env.no_proxy = "127.0.0.1,localhost";
  }
  return env;
}

/** What of `inherited` the agent keeps. */
function kept(inherited: Record<string, string>, keepEnv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(inherited)) {
    if (keepEnv.some((pattern) => matches(pattern, name))) out[name] = value;
  }
  return out;
}

/** A KEPT_ENV pattern: a name, or a prefix ending in `*`. */
function matches(pattern: string, name: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}
