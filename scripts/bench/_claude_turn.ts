// One Claude Code turn as reins asks for it (lib/drivers/claude.ts), without reins: the engine
// bench's direct run, in its own process, and — run as a script — the same turn from a Deno process
// that does nothing else, the floor of any Deno program around the CLI.
//   deno run --allow-run=PROGRAM --allow-env _claude_turn.ts PROGRAM CWD

/** Runs the turn: the user's message on stdin, read up to the result line, then stdin closed. */
export async function claudeTurn(
  program: string,
  cwd: string,
  env: Record<string, string>,
): Promise<void> {
  const child = new Deno.Command(program, {
    args: [
      "-p",
      "--output-format",
      "stream-json",
      "--verbose",
      "--input-format",
      "stream-json",
      "--session-id",
      crypto.randomUUID(),
      "--permission-mode",
      "acceptEdits",
    ],
    cwd,
    clearEnv: true,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(
      `${JSON.stringify({ type: "user", message: { role: "user", content: "hello" } })}\n`,
    ),
  );
  // Read until the result line, then close stdin, as the driver does.
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  while (!buffered.includes('"type":"result"')) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
  }
  await writer.close();
  while (!(await reader.read()).done) { /* drain */ }
  await child.stderr.cancel();
  const status = await child.status;
  if (!status.success) throw new Error(`claude exited ${status.code}`);
}

if (import.meta.main) {
  const [program, cwd] = Deno.args;
  await claudeTurn(program, cwd, Deno.env.toObject());
}
