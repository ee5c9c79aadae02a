// The command table. Each command's module is imported only when that command runs, so start-up
// pays for the dispatcher alone. Keep this file free of imports beyond the type.
import type { CommandModule } from "./command.ts";

export interface CommandEntry {
  readonly name: string;
  readonly summary: string;
  readonly load: () => Promise<CommandModule>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "doctor",
    summary: "check the data root, sandbox, harnesses and platform settings",
    load: () => import("./doctor.ts"),
  },
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((entry) => entry.name === name);
}
