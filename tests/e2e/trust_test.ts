// Never trust a file someone else can write: a context's session, run files, the config file,
// platform.json and outbox entries that another user owns, that group or others may write, or that
// sit in a directory others may write are not used (as OpenSSH treats keys); `reins doctor` lists
// them and `reins doctor --repair` tightens what is yours.
import assert from "node:assert/strict";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { makeRun } from "../platform/_runs.ts";
import { reins, tempDir } from "../support/reins.ts";

const AGENT = new URL("../fixtures/agents/protocol.sh", import.meta.url).pathname;
/** A uid nobody here has: root can chown to it. */
const NOBODY = 65534;
const isRoot = Deno.uid() === 0;

async function turn(home: string, prompt = "go") {
  const result = await reins(
    ["run", "--driver", "command", "--exec", `sh ${AGENT}`, "--context", "c1", "--json", prompt],
    { home, allowRun: ["sh"] },
  );
  assert.equal(result.code, 0, result.stderr);
  return { ...JSON.parse(result.stdout), stderr: result.stderr };
}

/** A context whose session was made by a first turn; returns that session id and the file. */
async function contextWithSession(home: string) {
  const first = await turn(home, "first");
  assert.match(first.result, /native=none$/);
  const second = await turn(home, "second");
  assert.equal(second.sessionId, first.sessionId);
  assert.match(second.result, new RegExp(`native=native-${first.sessionId}$`));
  return { sessionId: first.sessionId, file: `${home}/contexts/c1/harness-session.json` };
}

/** Plants the session an attacker wants the agent to continue. */
function plantSession(file: string): void {
  const entry = JSON.parse(Deno.readTextFileSync(file));
  entry.native_session_id = "attacker-chosen";
  Deno.writeTextFileSync(file, JSON.stringify(entry));
}

const plants: [string, (file: string) => void][] = [
  ["writable by group and others (0666)", (file) => {
    plantSession(file);
    Deno.chmodSync(file, 0o666);
  }],
  ["in a directory others may write (0777)", (file) => {
    plantSession(file);
    Deno.chmodSync(file.slice(0, file.lastIndexOf("/")), 0o777);
  }],
  ["owned by another user", (file) => {
    plantSession(file);
    Deno.chownSync(file, NOBODY, NOBODY);
  }],
];

for (const [how, plant] of plants) {
  Deno.test({
    name:
      `regression: a context session ${how} is not resumed; reins warns once and doctor lists it`,
    ignore: how.includes("another user") && !isRoot,
    async fn() {
      await using dir = await tempDir();
      const { sessionId, file } = await contextWithSession(dir.path);
      plant(file);
      const next = await turn(dir.path, "third");
      assert.doesNotMatch(next.result, /attacker-chosen/);
      assert.match(next.result, /native=none$/);
      assert.notEqual(next.sessionId, sessionId);
      const warnings = next.stderr.split("\n").filter((line: string) => line.includes(file));
      assert.equal(warnings.length, 1, next.stderr);
      assert.match(warnings[0], /ignoring the session of context 'c1' in .*: .*(writable|owned)/);

      // The fresh session replaced the planted file with one of ours, which the next turn resumes.
      const after = await turn(dir.path, "fourth");
      assert.equal(after.sessionId, next.sessionId);
      assert.doesNotMatch(after.stderr, /ignoring/);
    },
  });
}

Deno.test("regression: reins doctor lists an untrusted session, and --repair removes it with a count", async () => {
  await using dir = await tempDir();
  const { file } = await contextWithSession(dir.path);
  Deno.chmodSync(file, 0o666);
  Deno.chmodSync(`${dir.path}/runs`, 0o755);

  const doctor = await reins(["doctor"], { home: dir.path });
  assert.equal(doctor.code, 0, doctor.stderr);
  assert.match(
    doctor.stdout,
    /untrusted contexts\/c1\/harness-session\.json: it is writable by group and others \(mode 0666\); not used/,
  );
  assert.match(doctor.stdout, /not private runs: others may read it \(mode 0755\)/);
  assert.match(doctor.stdout, /2 mode\(s\) wider than 0600\/0700: reins doctor --repair/);
  // Reporting changes nothing.
  assert.equal(Deno.statSync(file).mode! & 0o777, 0o666);

  const repaired = await reins(["doctor", "--repair", "--json"], { home: dir.path });
  assert.equal(repaired.code, 0, repaired.stderr);
  const report = JSON.parse(repaired.stdout).dataRoot;
  assert.deepEqual(report.repair, {
    tightened: [`${dir.path}/runs`],
    removed: [file],
    failed: [],
  });
  assert.deepEqual(report.findings, []);
  assert.equal(Deno.statSync(`${dir.path}/runs`).mode! & 0o777, 0o700);
  assert.throws(() => Deno.statSync(file), Deno.errors.NotFound);
});

Deno.test("regression: a run.json others may write is refused by show and skipped by recover", async () => {
  await using dir = await tempDir();
  const ran = await reins(["run", "--json", "hello"], { home: dir.path });
  assert.equal(ran.code, 0, ran.stderr);
  const { runId } = JSON.parse(ran.stdout);
  const record = `${dir.path}/runs/${runId}/run.json`;
  Deno.chmodSync(record, 0o666);

  const shown = await reins(["show", runId], { home: dir.path });
  assert.equal(shown.code, 6, shown.stderr);
  assert.match(
    shown.stderr,
    new RegExp(`^reins: Refusing ".*${runId}/run.json": it is writable by group and others`),
  );
  assert.match(shown.stderr, /hint: .*reins doctor/);

  const recovered = await reins(["recover", "--json"], { home: dir.path });
  assert.equal(recovered.code, 0, recovered.stderr);
  const report = JSON.parse(recovered.stdout);
  assert.equal(report.checked, 1);
  assert.deepEqual(report.skipped, [runId]);

  // Once repaired (a person looked at it), it is used again.
  assert.equal((await reins(["doctor", "--repair"], { home: dir.path })).code, 0);
  assert.equal((await reins(["show", runId], { home: dir.path })).code, 0);
});

Deno.test({
  name: "regression: an events.jsonl owned by another user is refused",
  ignore: !isRoot,
  async fn() {
    await using dir = await tempDir();
    const ran = await reins(["run", "--json", "hello"], { home: dir.path });
    const { runId } = JSON.parse(ran.stdout);
    Deno.chownSync(`${dir.path}/runs/${runId}/events.jsonl`, NOBODY, NOBODY);
    const shown = await reins(["show", runId, "--json"], { home: dir.path });
    assert.equal(shown.code, 6, shown.stderr);
    assert.match(
      JSON.parse(shown.stdout).error.message,
      /events\.jsonl": it is owned by uid 65534/,
    );
    const doctor = await reins(["doctor"], { home: dir.path });
    assert.match(
      doctor.stdout,
      /untrusted runs\/.*\/events\.jsonl: it is owned by uid 65534.*chown/,
    );
  },
});

Deno.test("regression: a config file others may write is refused (it names the programs reins runs)", async () => {
  await using dir = await tempDir();
  const config = `${dir.path}/config.json`;
  Deno.writeTextFileSync(config, JSON.stringify({ drivers: { claude: { program: "/tmp/evil" } } }));
  Deno.chmodSync(config, 0o666);
  const ran = await reins(["run", "hello"], { home: dir.path });
  assert.equal(ran.code, 6, ran.stderr);
  assert.match(ran.stderr, /^reins: Refusing ".*config\.json": it is writable by group and others/);
  const doctor = await reins(["doctor", "--json"], { home: dir.path });
  assert.equal(doctor.code, 0, doctor.stderr);
  assert.match(JSON.parse(doctor.stdout).config.untrusted, /writable by group and others/);
});

Deno.test("regression: platform.json and an outbox entry others may write are not used", async () => {
  await using dir = await tempDir();
  const platform = startFakePlatform();
  try {
    const env = {
      HARNESS_PLATFORM_URL: platform.url,
      HARNESS_PLATFORM_API_KEY: platform.apiKey,
      HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
    };
    const { record } = await makeRun(dir.path);
    const first = await reins(["report", record.id, "--name", "nightly"], { home: dir.path, env });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(platform.tests.size, 1);

    // platform.json remembers the test "nightly" joins; made writable by others, it is set aside
    // and the next report provisions its own test rather than join whatever it names.
    Deno.chmodSync(`${dir.path}/platform.json`, 0o666);
    const again = await makeRun(dir.path);
    const second = await reins(["report", again.record.id, "--name", "nightly"], {
      home: dir.path,
      env,
    });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(platform.tests.size, 2);
    assert.ok(Deno.statSync(`${dir.path}/platform.json.untrusted`).isFile);

    // An outbox entry others may write could send any file anywhere: never sent.
    const down = { ...env, HARNESS_PLATFORM_URL: "http://127.0.0.1:9" };
    const third = await makeRun(dir.path);
    assert.equal((await reins(["report", third.record.id], { home: dir.path, env: down })).code, 5);
    const [entry] = [...Deno.readDirSync(`${dir.path}/outbox`)]
      .map((e) => e.name).filter((name) => name.endsWith(".json"));
    Deno.chmodSync(`${dir.path}/outbox/${entry}`, 0o666);
    const before = platform.requests.length;
    const pending = await reins(["report", "--pending"], { home: dir.path, env });
    assert.equal(pending.code, 5, pending.stderr);
    assert.match(pending.stderr, /writable by group and others/);
    assert.equal(platform.requests.length, before, "nothing was sent");
    const doctor = await reins(["doctor", "--json"], { home: dir.path, env });
    assert.match(
      JSON.parse(doctor.stdout).platform.unreadableReports[0],
      /writable by group and others \(mode 0666\); it is not sent/,
    );
  } finally {
    await platform.close();
  }
});
