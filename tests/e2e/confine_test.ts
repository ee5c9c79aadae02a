// reins run --confine with the real bubblewrap: a command agent that tries each way out — your
// secret stores, the data root, reins's pid, a loopback port that is not its way out, an outside
// address, another context's session — and fails at each, while its working directory is
// writable, an allowed host is reachable, and every proxy connection is an event of the run.
// Everything lives under /var/tmp, not /tmp: the sandbox's /tmp is private, which would hide a
// planted secret there whether or not reins hides it.
import assert from "node:assert/strict";
import { SendMessageRequest, type Task, TaskState } from "@a2a-js/sdk";
import { officialClient } from "../serve/_server.ts";
import { openStore } from "../../lib/store/store.ts";
import { reins, spawnReins } from "../support/reins.ts";

const HAVE_BWRAP = await new Deno.Command("bwrap", {
  args: ["--unshare-all", "--ro-bind", "/", "/", "--", "true"],
  stdout: "null",
  stderr: "null",
}).output().then((out) => out.success, () => false);
if (!HAVE_BWRAP) {
  console.error(
    "%c!! tests/e2e/confine_test.ts SKIPPED: bubblewrap is missing or cannot make namespaces here " +
      "(apt-get install bubblewrap socat)",
    "color: red",
  );
}
const ALLOW_RUN = ["bwrap", "env", "ls", "socat"];

async function scratch(): Promise<{ root: string; home: string; data: string; work: string }> {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-confine-" });
  const home = `${root}/home`;
  const data = `${root}/data`;
  const work = `${root}/work`;
  for (const dir of [home, `${home}/.ssh`, data, work]) await Deno.mkdir(dir, { mode: 0o700 });
  await Deno.writeTextFile(`${home}/.ssh/id_rsa`, "PRIVATE KEY\n");
  await Deno.writeTextFile(`${home}/.netrc`, "machine x password hunter2\n");
  return { root, home, data, work };
}

function listen(hostname: string): { port: number; close(): Promise<void> } {
  const server = Deno.serve(
    { hostname, port: 0, onListen() {} },
    () => new Response("reached\n"),
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}

// Under the binary's sandbox (the environment trimmed inside, socat making the sockets) and with
// --allow-all (trimmed by reins, the sockets piped in-process): the same escapes fail either way.
for (const allowAll of [false, true]) {
  Deno.test({
    name: `reins run --confine: a command agent's every way out fails, and its recording is intact${
      allowAll ? " (--allow-all)" : ""
    }`,
    ignore: !HAVE_BWRAP,
    async fn() {
      const s = await scratch();
      const notTheGateway = listen("127.0.0.1");
      const allowed = listen("127.0.0.2");
      try {
        // Another context's turn first: its session is in the data root, which the agent lacks.
        const other = await reins(
          ["run", "--driver", "command", "--context", "other", "--exec", "true", "first"],
          { home: s.data, cwd: s.work, env: { HOME: s.home }, allowRun: ["true"] },
        );
        assert.equal(other.code, 0, other.stderr);
        const otherSession = `${s.data}/contexts/other/harness-session.json`;
        assert.ok((await Deno.stat(otherSession)).isFile);

        const probe = `${s.work}/probe.sh`;
        await Deno.writeTextFile(
          probe,
          `try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name:yes"; else echo "$name:no"; fi; }
while [ ! -s reins.pid ]; do sleep 0.05; done
try read-ssh cat ${s.home}/.ssh/id_rsa
try read-netrc grep -q hunter2 ${s.home}/.netrc
try write-data-root touch ${s.data}/evil
try list-data-root ls ${s.data}/runs
try read-other-context cat ${otherSession}
try signal-reins kill -0 "$(cat reins.pid)"
try loopback-direct curl -sf -m 3 --noproxy '*' http://127.0.0.1:${notTheGateway.port}/
try loopback-proxy curl -sf -m 3 http://127.0.0.2:${notTheGateway.port}/
try outside curl -sf -m 3 --noproxy '*' http://1.1.1.1/
try outside-proxy curl -sf -m 3 http://example.com/
try write-cwd touch written
try allowed-host curl -sf -m 3 http://127.0.0.2:${allowed.port}/
echo "platform-env:\${HARNESS_PLATFORM_API_KEY:-none}"
`,
        );
        const child = spawnReins(
          [
            "run",
            "--driver",
            "command",
            "--confine",
            "--allow-host",
            `127.0.0.2:${allowed.port}`,
            "--exec",
            `sh ${probe}`,
            "probe",
          ],
          {
            home: s.data,
            cwd: s.work,
            env: { HOME: s.home, HARNESS_PLATFORM_API_KEY: "platform-secret" },
            allowRun: ALLOW_RUN,
            allowNet: ["127.0.0.2"],
            allowAll,
          },
        );
        await Deno.writeTextFile(`${s.work}/reins.pid`, `${child.pid}\n`);
        const out = await child.output();
        const stdout = new TextDecoder().decode(out.stdout);
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        const said = Object.fromEntries(
          stdout.split("\n").filter((line) => line.includes(":")).map((line) => line.split(":")),
        );
        assert.deepEqual(said, {
          "read-ssh": "no",
          "read-netrc": "no",
          "write-data-root": "no",
          "list-data-root": "no",
          "read-other-context": "no",
          "signal-reins": "no",
          "loopback-direct": "no",
          "loopback-proxy": "no",
          "outside": "no",
          "outside-proxy": "no",
          "write-cwd": "yes",
          "allowed-host": "yes",
          "platform-env": "none",
        });
        await assert.rejects(Deno.stat(`${s.data}/evil`));
        assert.ok((await Deno.stat(`${s.work}/written`)).isFile);

        // The recording is whole, and says which connections were asked for.
        using store = openStore(s.data);
        const runs = store.listRuns().filter((run) => run.contextId !== "other");
        assert.equal(runs.length, 1);
        assert.equal(runs[0].status, "completed");
        const connections = store.readEvents(runs[0].id).events.flatMap((event) =>
          event.type === "network.connection" ? [event.payload] : []
        );
        const byHost = connections.map((c) => `${c.host}:${c.port}:${c.allowed}`).sort();
        assert.deepEqual(
          byHost,
          [
            `127.0.0.2:${allowed.port}:true`,
            `127.0.0.2:${notTheGateway.port}:false`,
            "example.com:80:false",
          ].sort(),
        );
        const reached = connections.find((c) => c.allowed)!;
        assert.ok(reached.bytesSent > 0 && reached.bytesReceived > 0, JSON.stringify(reached));
      } finally {
        await notTheGateway.close();
        await allowed.close();
        await Deno.remove(s.root, { recursive: true });
      }
    },
  });
}

Deno.test({
  name: "reins run --confine: SIGINT gives the confined agent its grace before SIGKILL",
  ignore: !HAVE_BWRAP,
  async fn() {
    const s = await scratch();
    try {
      // regression: bubblewrap's outer process died of the SIGINT at once and, dying, took the
      // sandbox with it (--die-with-parent): the agent never ran its handler.
      const agent = `${s.work}/agent.sh`;
      await Deno.writeTextFile(
        agent,
        `trap 'sleep 1; echo graceful > stopped; exit 0' INT
echo started > started
while :; do sleep 0.1; done
`,
      );
      const child = spawnReins(
        ["run", "--driver", "command", "--confine", "--exec", `sh ${agent}`, "wait"],
        { home: s.data, cwd: s.work, env: { HOME: s.home }, allowRun: ALLOW_RUN },
      );
      const deadline = Date.now() + 20_000;
      while (!(await Deno.stat(`${s.work}/started`).then(() => true, () => false))) {
        if (Date.now() > deadline) {
          child.kill("SIGKILL");
          const out = await child.output();
          throw new Error(`the agent never started: ${new TextDecoder().decode(out.stderr)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // The agent starts as any (the setsid trampoline, which, like env, execs the next): reins's
      // child is bubblewrap itself, the leader of a session and group that holds the agent.
      // (Its other children are socat, making the bridges' sockets outside.)
      const children = childrenOf(child.pid).map(procStat);
      const leaders = children.filter((p) => p.comm !== "socat");
      assert.deepEqual(leaders.map((p) => p.comm), ["bwrap"], JSON.stringify(children));
      const [stat] = leaders;
      const outer = stat.pid;
      assert.equal(stat.pgrp, outer);
      assert.equal(stat.session, outer);
      const inside = descendantsOf(outer).map(procStat);
      assert.ok(inside.some((p) => p.comm === "sh"), JSON.stringify(inside));
      for (const p of inside.filter((p) => p.comm === "sh")) assert.equal(p.pgrp, outer);
      child.kill("SIGINT");
      const out = await child.output();
      assert.equal(await Deno.readTextFile(`${s.work}/stopped`), "graceful\n");
      assert.notEqual(out.code, 0);
      using store = openStore(s.data);
      const [run] = store.listRuns();
      assert.equal(run.status, "interrupted");
    } finally {
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test("reins run --confine without bubblewrap: exit 4, one line saying what to install, no run", async () => {
  const s = await scratch();
  try {
    // A PATH with Deno alone on it: no bwrap to find.
    const denoDir = Deno.execPath().slice(0, Deno.execPath().lastIndexOf("/"));
    const env = { HOME: s.home, PATH: denoDir };
    const refused = await reins(
      ["run", "--driver", "command", "--confine", "--exec", "true", "hi"],
      { home: s.data, cwd: s.work, env, allowRun: ALLOW_RUN },
    );
    assert.equal(refused.code, 4, refused.stderr);
    assert.equal(
      refused.stderr.trim(),
      "reins: Cannot confine the agent (--confine): bubblewrap is not installed: install it " +
        "(apt-get install bubblewrap)",
    );
    await assert.rejects(Deno.stat(`${s.data}/runs`));
    const doctor = await reins(["doctor"], { home: s.data, cwd: s.work, env, allowRun: ALLOW_RUN });
    assert.match(doctor.stdout, /^confine {6}does not work here: bubblewrap is not installed/m);
  } finally {
    await Deno.remove(s.root, { recursive: true });
  }
});

// regression: --allow-host without --confine was taken and ignored: the agent ran unconfined,
// reaching every host, where a confined turn with one way out was asked for
Deno.test("reins run --allow-host without --confine: exit 2 saying so, no run; with the config's confine.enabled it runs", async () => {
  const s = await scratch();
  try {
    const args = ["run", "--driver", "command", "--allow-host", "example.com", "--exec", "true"];
    // ("true" may run unconfined: what the turn did when it took the flag and ran anyway.)
    const refused = await reins([...args, "hi"], {
      home: s.data,
      cwd: s.work,
      env: { HOME: s.home },
      allowRun: [...ALLOW_RUN, "true"],
    });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /^reins: --allow-host goes with --confine\n/);
    await assert.rejects(Deno.stat(`${s.data}/runs`));
    if (!HAVE_BWRAP) return;
    await Deno.writeTextFile(
      `${s.data}/config.json`,
      JSON.stringify({ confine: { enabled: true } }),
    );
    const confined = await reins([...args, "hi"], {
      home: s.data,
      cwd: s.work,
      env: { HOME: s.home },
      allowRun: ALLOW_RUN,
    });
    assert.equal(confined.code, 0, confined.stderr);
  } finally {
    await Deno.remove(s.root, { recursive: true });
  }
});

// regression: a bad host in the config's confine.allowHosts was said as if given to --allow-host,
// naming neither the config file nor the key
Deno.test("reins run --confine with a bad host in the config's confine.allowHosts: exit 2 naming the file and the key", async () => {
  const s = await scratch();
  try {
    const config = `${s.data}/config.json`;
    await Deno.mkdir(s.data, { recursive: true });
    await Deno.writeTextFile(config, JSON.stringify({ confine: { allowHosts: ["exa mple"] } }));
    const refused = await reins(
      ["run", "--driver", "command", "--confine", "--exec", "true", "hi"],
      { home: s.data, cwd: s.work, env: { HOME: s.home }, allowRun: ALLOW_RUN },
    );
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(`^reins: ${config}: confine\\.allowHosts: Cannot allow host "exa mple"`),
    );
  } finally {
    await Deno.remove(s.root, { recursive: true });
  }
});

// regression: in a suite the same bad host made every confined scenario an error, each saying
// only `Cannot allow host "exa mple"`, naming neither the config file nor the key
Deno.test("reins suite run with a confined scenario and a bad host in confine.allowHosts: exit 2 naming the file, nothing begun", async () => {
  const s = await scratch();
  try {
    const config = `${s.data}/config.json`;
    await Deno.mkdir(s.data, { recursive: true });
    await Deno.writeTextFile(config, JSON.stringify({ confine: { allowHosts: ["exa mple"] } }));
    await Deno.writeTextFile(
      `${s.work}/suite.yaml`,
      [
        "suite: confined",
        "driver: command",
        "exec: 'true'",
        "scenarios:",
        "  - {key: a, confine: true, setup: ['true'], turns: [hi], checks: [{regex: x}]}",
      ].join("\n"),
    );
    const refused = await reins(["suite", "run", "suite.yaml", "--no-report"], {
      home: s.data,
      cwd: s.work,
      env: { HOME: s.home },
      allowRun: [...ALLOW_RUN, "true", "sh"],
    });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(`^reins: ${config}: confine\\.allowHosts: Cannot allow host "exa mple"`),
    );
    const suites = await Array.fromAsync(Deno.readDir(`${s.data}/suites`)).catch(() => []);
    assert.deepEqual(suites.filter((entry) => !entry.name.startsWith(".")), []);
  } finally {
    await Deno.remove(s.root, { recursive: true });
  }
});

Deno.test({
  name: "reins suite run: a scenario's confine holds its agent, its setup and its command checks",
  ignore: !HAVE_BWRAP,
  async fn() {
    const s = await scratch();
    try {
      const suite = `${s.work}/suite.yaml`;
      const agent = `${s.work}/agent.sh`;
      // The agent reports what it could read, as its final answer.
      await Deno.writeTextFile(
        agent,
        `if cat ${s.home}/.ssh/id_rsa >/dev/null 2>&1; then echo "key read"; else echo "no key"; fi\n`,
      );
      await Deno.writeTextFile(
        suite,
        [
          "suite: confined",
          "driver: command",
          `exec: sh ${agent}`,
          "scenarios:",
          "  - key: confined",
          "    confine: true",
          "    turns: [go]",
          // The setup cannot write into the data root, nor can a check read the key.
          `    setup: ["! touch ${s.data}/evil-setup", "touch from-setup"]`,
          "    checks:",
          "      - {regex: 'no key'}",
          `      - {command: 'cat ${s.home}/.ssh/id_rsa', exit: 1}`,
          "      - {command: 'test -f from-setup'}",
          "  - key: unconfined",
          "    turns: [go]",
          "    checks:",
          "      - {regex: 'key read'}",
        ].join("\n"),
      );
      const result = await reins(["suite", "run", "suite.yaml", "--no-report"], {
        home: s.data,
        cwd: s.work,
        env: { HOME: s.home },
        allowRun: [...ALLOW_RUN, "sh"],
        allowPaths: [s.home],
      });
      assert.equal(result.code, 0, result.stderr + result.stdout);
      assert.match(result.stdout, /^confined\s+passed\s+3\/3/m);
      assert.match(result.stdout, /^unconfined\s+passed\s+1\/1/m);
      await assert.rejects(Deno.stat(`${s.data}/evil-setup`));
    } finally {
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

/** The names of the processes under `pid`, from /proc. */
function under(pid: number): string[] {
  const names: string[] = [];
  let tasks: Deno.DirEntry[] = [];
  try {
    tasks = [...Deno.readDirSync(`/proc/${pid}/task`)];
  } catch {
    return names;
  }
  for (const task of tasks) {
    let children = "";
    try {
      children = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
    } catch {
      continue;
    }
    for (const child of children === "" ? [] : children.split(" ").map(Number)) {
      try {
        names.push(Deno.readTextFileSync(`/proc/${child}/comm`).trim());
      } catch {
        // gone meanwhile
      }
      names.push(...under(child));
    }
  }
  return names;
}

Deno.test({
  name: "reins serve --confine: each task's agent runs confined, the next's sandbox kept ready",
  ignore: !HAVE_BWRAP,
  async fn() {
    const s = await scratch();
    const agent = `${s.work}/agent.sh`;
    await Deno.writeTextFile(
      agent,
      `if ls ${s.data}/runs >/dev/null 2>&1; then echo "saw the data root"; else echo "no data root"; fi\n`,
    );
    const child = spawnReins(
      ["serve", "--port", "0", "--confine", "--driver", "command", "--exec", `sh ${agent}`],
      { home: s.data, cwd: s.work, env: { HOME: s.home }, allowRun: [...ALLOW_RUN, "sh"] },
    );
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let out = "";
      while (!out.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        out += value;
      }
      reader.releaseLock();
      const base = new URL("/", out.trim()).href;
      const client = await officialClient(
        base,
        (await Deno.readTextFile(`${s.data}/serve.token`)).trim(),
      );
      const task = await client.sendMessage(
        SendMessageRequest.fromJSON({
          message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "go" }] },
        }),
      ) as Task;
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task));
      const said = JSON.stringify(task);
      assert.match(said, /no data root/);
      assert.doesNotMatch(said, /saw the data root/);
      // serve keeps the next turn's sandbox ready (lib/confine/ready.ts): the second task's agent
      // runs confined as the first's did, and one is kept for a third.
      const second = await client.sendMessage(
        SendMessageRequest.fromJSON({
          message: {
            messageId: crypto.randomUUID(),
            role: "ROLE_USER",
            parts: [{ text: "again" }],
          },
        }),
      ) as Task;
      assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(second));
      assert.match(JSON.stringify(second), /no data root/);
      const deadline = Date.now() + 10_000;
      while (!under(child.pid).includes("bwrap") && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(under(child.pid).includes("bwrap"), "serve kept no sandbox ready");
      // Stopped, serve ends what it kept: its sockets' directory too.
      child.kill("SIGTERM");
      assert.equal((await child.status).code, 0);
      assert.deepEqual(
        [...Deno.readDirSync(`${s.data}/tmp`)].filter((e) => e.name.startsWith("net-")),
        [],
      );
    } finally {
      try {
        child.kill("SIGTERM");
      } catch {
        // stopped already
      }
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await child.stderr.cancel().catch(() => {});
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "reins run --confine: the loop's run_command runs confined, and is offered without sh",
  ignore: !HAVE_BWRAP,
  async fn() {
    const s = await scratch();
    try {
      const script = `${s.root}/script.json`;
      const probe =
        `cat ${s.home}/.ssh/id_rsa || echo no-key; ls ${s.data}/runs || echo no-runs; ` +
        "touch made-here && echo wrote";
      await Deno.writeTextFile(
        script,
        JSON.stringify([
          { toolCalls: [{ id: "c1", name: "run_command", args: { command: probe } }] },
          { text: "done" },
        ]),
      );
      const result = await reins(
        ["run", "--confine", "--model", `mock:${script}`, "--json", "go"],
        // No sh on the run list: bubblewrap confines what run_command runs.
        {
          home: s.data,
          cwd: s.work,
          env: { HOME: s.home },
          allowRun: ALLOW_RUN,
          allowPaths: [s.root],
        },
      );
      assert.equal(result.code, 0, result.stderr);
      using store = openStore(s.data);
      const events = store.readEvents(JSON.parse(result.stdout).runId).events;
      const tool = events.find((event) => event.type === "tool.completed");
      assert.ok(tool?.type === "tool.completed" && tool.payload.ok, JSON.stringify(tool));
      const { stdout } = tool.payload.result as { stdout: string };
      assert.match(stdout, /no-key/);
      assert.match(stdout, /no-runs/);
      assert.doesNotMatch(stdout, /PRIVATE KEY/);
      assert.match(stdout, /wrote/);
      assert.ok((await Deno.stat(`${s.work}/made-here`)).isFile);
    } finally {
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

/** The children of `pid` (every thread's), from /proc. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    const text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
    if (text !== "") children.push(...text.split(" ").map(Number));
  }
  return children;
}

function descendantsOf(pid: number): number[] {
  return childrenOf(pid).flatMap((child) => [child, ...descendantsOf(child)]);
}

/** The name, group and session of `pid` as seen from outside any pid namespace. */
function procStat(pid: number): { pid: number; comm: string; pgrp: number; session: number } {
  const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return {
    pid,
    comm: text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
  };
}
