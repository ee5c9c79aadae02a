// Driver name → driver, each module imported only when its driver is used.
import { importLazily } from "../core/lazy_import.ts";
import { assertNever } from "../core/assert_never.ts";
import type { DriverName, Settings } from "../core/config.ts";
import type { Driver } from "./driver.ts";

export async function createDriver(name: DriverName, _settings: Settings): Promise<Driver> {
  switch (name) {
    case "loop":
      return (await importLazily<typeof import("./loop/mod.ts")>(
        new URL("./loop/mod.ts", import.meta.url),
      )).createLoopDriver();
    case "command":
      return (await importLazily<typeof import("./command.ts")>(
        new URL("./command.ts", import.meta.url),
      )).createCommandDriver();
    case "claude":
      return (await importLazily<typeof import("./claude.ts")>(
        new URL("./claude.ts", import.meta.url),
      )).createClaudeDriver();
    case "codex":
      return (await importLazily<typeof import("./codex.ts")>(
        new URL("./codex.ts", import.meta.url),
      )).createCodexDriver();
    case "gemini":
      return (await importLazily<typeof import("./gemini.ts")>(
        new URL("./gemini.ts", import.meta.url),
      )).createGeminiDriver();
    case "opencode":
      return (await importLazily<typeof import("./opencode.ts")>(
        new URL("./opencode.ts", import.meta.url),
      )).createOpencodeDriver();
    default:
      return assertNever(name, "driver");
  }
}
