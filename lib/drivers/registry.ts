// Driver name → driver, each module imported only when its driver is used.
import { importLazily } from "../core/lazy_import.ts";
import { assertNever } from "../core/assert_never.ts";
import type { DriverName, Settings } from "../core/mod.ts";
import type { Driver } from "./driver.ts";

export async function createDriver(name: DriverName, _settings: Settings): Promise<Driver> {
  switch (name) {
    case "loop":
      return (await importLazily<typeof import("./loop/mod.ts")>("drivers/loop/mod.ts"))
        .createLoopDriver();
    case "command":
      return (await importLazily<typeof import("./command.ts")>("drivers/command.ts"))
        .createCommandDriver();
    case "claude":
      return (await importLazily<typeof import("./claude.ts")>("drivers/claude.ts"))
        .createClaudeDriver();
    case "codex":
      return (await importLazily<typeof import("./codex.ts")>("drivers/codex.ts"))
        .createCodexDriver();
    case "gemini":
      return (await importLazily<typeof import("./gemini.ts")>("drivers/gemini.ts"))
        .createGeminiDriver();
    case "opencode":
      return (await importLazily<typeof import("./opencode.ts")>("drivers/opencode.ts"))
        .createOpencodeDriver();
    default:
      return assertNever(name, "driver");
  }
}
