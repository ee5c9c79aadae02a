// A scripted stand-in for an agent CLI, for the drivers' unit tests: it prints the lines a real
// CLI printed (recorded from the pinned versions), reads stdin when told, exits as told, and
// records its argv and what it read so a test can check what the driver sent. The script is a
// JSON file named by FAKE_CLI_SCRIPT. The real CLIs are exercised in tests/interop/.

export type Step =
  /** A line on stdout: an object is written as JSON, a string as is. */
  | { out: unknown }
  | { err: string }
  | { sleepMs: number }
  /** Waits until a signal ends the process. */
  | { hang: true }
  /** Reads one line of stdin (recorded). */
  | { readLine: true }
  /** Reads stdin to its end (recorded). */
  | { readAll: true }
  /** Goes on with `then` when the last thing read contains `contains`, else with `else`. */
  | { ifRead: string; then: Step[]; else: Step[] }
  | { exit: number };

export interface FakeCliScript {
  /** Where to write {argv, stdin} when the script ends (or a signal ends it). */
  record: string;
  steps: Step[];
  /** On SIGINT: "ignore" it, or run these steps (which should exit). Default: exit 130. */
  onSigint?: "ignore" | Step[];
}

export interface FakeCliRecord {
  argv: string[];
  stdin: string[];
  env: Record<string, string | undefined>;
}

/** Writes `script` and a wrapper program that runs this file with it; returns the program. */
export async function writeFakeCli(dir: string, script: Omit<FakeCliScript, "record">): Promise<{
  program: string;
  env: Record<string, string>;
  recorded: () => Promise<FakeCliRecord>;
}> {
  const id = crypto.randomUUID().slice(0, 8);
  const scriptPath = `${dir}/fake-cli-${id}.json`;
  const record = `${dir}/fake-cli-${id}.record.json`;
  await Deno.writeTextFile(scriptPath, JSON.stringify({ ...script, record }));
  const program = `${dir}/fake-cli-${id}`;
  const self = new URL(import.meta.url).pathname;
  await Deno.writeTextFile(
    program,
    `#!/bin/sh\nexec "${Deno.execPath()}" run --quiet --allow-all "${self}" "$@"\n`,
  );
  await Deno.chmod(program, 0o755);
  return {
    program,
    env: { FAKE_CLI_SCRIPT: scriptPath },
    recorded: async () => JSON.parse(await Deno.readTextFile(record)),
  };
}

async function main(): Promise<void> {
  const script: FakeCliScript = JSON.parse(
    await Deno.readTextFile(Deno.env.get("FAKE_CLI_SCRIPT")!),
  );
  const read: string[] = [];
  const encoder = new TextEncoder();
  const reader = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let ended = false;
  const save = () =>
    Deno.writeTextFileSync(
      script.record,
      JSON.stringify(
        {
          argv: Deno.args,
          stdin: read,
          env: { OPENCODE_PERMISSION: Deno.env.get("OPENCODE_PERMISSION") },
        } satisfies FakeCliRecord,
      ),
    );
  const exit = (code: number): never => {
    save();
    Deno.exit(code);
  };

  const readLine = async (): Promise<string | null> => {
    while (!buffered.includes("\n") && !ended) {
      const { value, done } = await reader.read();
      if (done) ended = true;
      else buffered += value;
    }
    if (buffered === "" && ended) return null;
    const at = buffered.indexOf("\n");
    const line = at >= 0 ? buffered.slice(0, at) : buffered;
    buffered = at >= 0 ? buffered.slice(at + 1) : "";
    return line;
  };

  const run = async (steps: Step[]): Promise<void> => {
    for (const step of steps) {
      if ("out" in step) {
        const line = typeof step.out === "string" ? step.out : JSON.stringify(step.out);
        await Deno.stdout.write(encoder.encode(`${line}\n`));
      } else if ("err" in step) {
        await Deno.stderr.write(encoder.encode(`${step.err}\n`));
      } else if ("sleepMs" in step) {
        await new Promise((resolve) => setTimeout(resolve, step.sleepMs));
      } else if ("hang" in step) {
        save();
        // A pending promise alone does not keep Deno alive; a timer does.
        setInterval(() => {}, 60_000);
        await new Promise(() => {});
      } else if ("readLine" in step) {
        const line = await readLine();
        if (line !== null) read.push(line);
      } else if ("readAll" in step) {
        let line: string | null;
        const lines: string[] = [];
        while ((line = await readLine()) !== null) lines.push(line);
        read.push(lines.join("\n"));
      } else if ("ifRead" in step) {
        const last = read[read.length - 1] ?? "";
        await run(last.includes(step.ifRead) ? step.then : step.else);
      } else if ("exit" in step) {
        exit(step.exit);
      }
    }
  };

  if (script.onSigint === "ignore") {
    Deno.addSignalListener("SIGINT", () => {});
  } else {
    const onSigint = script.onSigint ?? [{ exit: 130 }];
    Deno.addSignalListener("SIGINT", () => {
      run(onSigint).then(() => exit(0));
    });
  }
  Deno.addSignalListener("SIGTERM", () => exit(143));
  await run(script.steps);
  exit(0);
}

if (import.meta.main) await main();
