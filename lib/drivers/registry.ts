// Driver name → driver, each module imported only when its driver is used.
import { assertNever } from "../core/assert_never.ts";
import type { DriverName, Settings } from "../core/config.ts";
import type { Driver } from "./driver.ts";

export async function createDriver(name: DriverName, _settings: Settings): Promise<Driver> {
  switch (name) {
    case "loop":
      return (await import("./loop/mod.ts")).createLoopDriver();
    case "command":
      return (await import("./command.ts")).createCommandDriver();
    case "claude":
      return (await import("./claude.ts")).createClaudeDriver();
    case "codex":
      return (await import("./codex.ts")).createCodexDriver();
    case "gemini":
      return (await import("./gemini.ts")).createGeminiDriver();
    case "opencode":
      return (await import("./opencode.ts")).createOpencodeDriver();
    default:
      return assertNever(name, "driver");
  }
}
