// reins: runs, records, resumes and reports agent sessions. argv → command → exit code.
import { runCli } from "./lib/cli/main.ts";

if (import.meta.main) {
  Deno.exit(await runCli(Deno.args));
}
