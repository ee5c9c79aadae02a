// The sandbox the running reins has, as `reins doctor` shows it: for the places reins uses (its
// data root, the working directory, the platform and model hosts, the harness programs, sh, kill
// and ps), whether this process may use them, and whether it may use anything at all. A compiled
// binary has the sandbox its build baked in; `deno task reins` the one made when it started.

export interface SandboxQuery {
  home: string;
  cwd: string;
  /** URLs whose hosts reins would reach (null entries are skipped). */
  hosts: (string | null)[];
  /** The harness programs as configured. */
  programs: string[];
}

export interface SandboxInForce {
  read: { dataRoot: boolean; workingDir: boolean; anywhere: boolean };
  write: { dataRoot: boolean; workingDir: boolean; anywhere: boolean };
  net: { loopback: boolean; hosts: Record<string, boolean>; anywhere: boolean };
  run: { programs: Record<string, boolean>; shell: boolean; anything: boolean };
  env: { all: boolean };
  sys: { uid: boolean };
}

function granted(descriptor: Deno.PermissionDescriptor): boolean {
  return Deno.permissions.querySync(descriptor).state === "granted";
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}

export function sandboxInForce(query: SandboxQuery): SandboxInForce {
  const hosts: Record<string, boolean> = {};
  for (const url of query.hosts) {
    const host = url === null ? null : hostOf(url);
    if (host !== null) hosts[host] = granted({ name: "net", host });
  }
  const programs: Record<string, boolean> = {};
  for (const program of [...query.programs, "kill", "ps"]) {
    programs[program] = granted({ name: "run", command: program });
  }
  return {
    read: {
      dataRoot: granted({ name: "read", path: query.home }),
      workingDir: granted({ name: "read", path: query.cwd }),
      anywhere: granted({ name: "read" }),
    },
    write: {
      dataRoot: granted({ name: "write", path: query.home }),
      workingDir: granted({ name: "write", path: query.cwd }),
      anywhere: granted({ name: "write" }),
    },
    net: {
      loopback: granted({ name: "net", host: "127.0.0.1" }),
      hosts,
      anywhere: granted({ name: "net" }),
    },
    run: {
      programs,
      shell: granted({ name: "run", command: "sh" }),
      anything: granted({ name: "run" }),
    },
    env: { all: granted({ name: "env" }) },
    sys: { uid: granted({ name: "sys", kind: "uid" }) },
  };
}

const yes = (value: boolean) => value ? "yes" : "no";

/** The sandbox as a few lines for people. */
export function sandboxLines(sandbox: SandboxInForce): string[] {
  const pairs = (entries: [string, boolean][]) =>
    entries.map(([name, value]) => `${name} ${yes(value)}`).join(", ");
  return [
    `read: ${
      pairs([
        ["data root", sandbox.read.dataRoot],
        ["working dir", sandbox.read.workingDir],
        ["anywhere", sandbox.read.anywhere],
      ])
    }; write: ${
      pairs([
        ["data root", sandbox.write.dataRoot],
        ["working dir", sandbox.write.workingDir],
        ["anywhere", sandbox.write.anywhere],
      ])
    }`,
    `net: ${
      pairs([
        ["loopback", sandbox.net.loopback],
        ...Object.entries(sandbox.net.hosts),
        ["anywhere", sandbox.net.anywhere],
      ])
    }`,
    `run: ${
      pairs([
        ...Object.entries(sandbox.run.programs),
        ["sh", sandbox.run.shell],
        ["anything", sandbox.run.anything],
      ])
    }${sandbox.run.shell ? "" : " (the loop's run_command tool is off)"}`,
    `env: all ${yes(sandbox.env.all)} (else only what reins reads); sys: uid ${
      yes(sandbox.sys.uid)
    }; Deno cannot confine the programs reins starts`,
  ];
}
