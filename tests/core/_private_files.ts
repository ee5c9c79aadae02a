// What the tests of the data root's private files share: a child process that writes them
// under a given umask (tests/fixtures/private_files_child.ts), and a file's mode.
import { OpenLogs } from "../../lib/core/private_log.ts";

export const CHILD = new URL("../fixtures/private_files_child.ts", import.meta.url).pathname;

/** One line through a fresh OpenLogs, as a process that appends once would. */
export function appendPrivateLine(root: string, path: string, line: string): void {
  using logs = new OpenLogs(root);
  logs.append(path, line);
}

export function mode(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

export async function child(args: string[], umask = "022"): Promise<void> {
  const script = `umask ${umask}; exec "$0" run -A --quiet "$@"`;
  const out = await new Deno.Command("sh", {
    args: ["-c", script, Deno.execPath(), CHILD, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
}
