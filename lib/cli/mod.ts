// The door of lib/cli/, the top room: the command line — argv to a command to an exit code. Only
// cli prints, reads flags and signals, and exits; every room below returns values or throws
// (docs/architecture.md). No room imports cli; main.ts imports ./main.ts itself, keeping every
// start-up path (reins --version, reins runs) one module shorter.
export { runCli } from "./main.ts";
