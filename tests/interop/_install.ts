// Installs the pinned agent CLIs from npm into a cache outside the repo
// ($REINS_INTEROP_CACHE, default ~/.cache/reins-interop/<cli>@<version>) and reuses what is
// there. Only an unreachable npm registry makes a CLI "skipped"; any other install failure fails
// the suite. A half-finished install never counts: it goes into a temp folder renamed at the end.
import type { HarnessDriver } from "../../lib/core/config.ts";

export interface PinnedCli {
  driver: HarnessDriver;
  cli: string;
  pkg: string;
  version: string;
}

/** The versions INTEROP.md observed; newer ones may behave differently, so they are pinned. */
export const PINNED: Record<HarnessDriver, PinnedCli> = {
  claude: {
    driver: "claude",
    cli: "Claude Code",
    pkg: "@anthropic-ai/claude-code",
    version: "2.1.328",
  },
  codex: { driver: "codex", cli: "Codex", pkg: "@openai/codex", version: "0.171.0" },
  gemini: { driver: "gemini", cli: "Gemini CLI", pkg: "@google/gemini-cli", version: "0.61.0" },
  opencode: { driver: "opencode", cli: "opencode", pkg: "opencode-ai", version: "1.18.33" },
};

const INSTALL_TIMEOUT_MS = 15 * 60_000;
const PING_TIMEOUT_MS = 20_000;

export type Installed = { program: string; dir: string; skip: null } | {
  program: null;
  dir: null;
  skip: string;
};

export function cacheRoot(): string {
  return Deno.env.get("REINS_INTEROP_CACHE") ||
    `${Deno.env.get("HOME") ?? "/tmp"}/.cache/reins-interop`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** The program to run inside an installed package folder (the native binary where there is one). */
async function programIn(dir: string, driver: HarnessDriver): Promise<string | null> {
  const modules = `${dir}/node_modules`;
  switch (driver) {
    case "claude": {
      const path = `${modules}/@anthropic-ai/claude-code/bin/claude.exe`;
      return await exists(path) ? path : null;
    }
    case "codex": {
      // The native binary of the platform package (@openai/codex-linux-x64, …); bin/codex.js
      // is only a Node launcher in front of it.
      for await (const entry of Deno.readDir(`${modules}/@openai`)) {
        if (!entry.name.startsWith("codex-")) continue;
        const vendor = `${modules}/@openai/${entry.name}/vendor`;
        if (!await exists(vendor)) continue;
        for await (const triple of Deno.readDir(vendor)) {
          const path = `${vendor}/${triple.name}/bin/codex`;
          if (await exists(path)) return path;
        }
      }
      return null;
    }
    case "gemini": {
      const path = `${modules}/.bin/gemini`;
      return await exists(path) ? path : null;
    }
    case "opencode": {
      const path = `${modules}/opencode-ai/bin/opencode.exe`;
      return await exists(path) ? path : null;
    }
  }
}

async function npm(args: string[], timeoutMs: number): Promise<{ ok: boolean; output: string }> {
  try {
    const output = await new Deno.Command("npm", {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    if (output.signal) {
      return { ok: false, output: `no answer within ${timeoutMs / 1000} s (${text.trim()})` };
    }
    return { ok: output.success, output: text.trim() };
  } catch (error) {
    return { ok: false, output: (error as Error).message };
  }
}

let registryCheck: Promise<string | null> | null = null;

/** null when the npm registry answers, else why it does not (checked once per process). */
export function registryUnreachable(): Promise<string | null> {
  registryCheck ??= (async () => {
    const ping = await npm(["ping"], PING_TIMEOUT_MS);
    if (ping.ok) return null;
    const lines = ping.output.split("\n").filter(Boolean);
    const why = lines.find((line) => /FetchError|ENOTFOUND|ETIMEDOUT|no answer/.test(line)) ??
      lines.find((line) => /error code/.test(line)) ?? lines.at(-1) ?? "no output";
    return `npm ping failed: ${why}`;
  })();
  return registryCheck;
}

/** Makes sure the pinned CLI is in the cache; returns its program, or why it is skipped. */
export async function ensureCli(driver: HarnessDriver): Promise<Installed> {
  const pinned = PINNED[driver];
  const dir = `${cacheRoot()}/${driver}@${pinned.version}`;
  const ready = await exists(dir) ? await programIn(dir, driver) : null;
  if (ready) return { program: ready, dir, skip: null };

  const unreachable = await registryUnreachable();
  if (unreachable !== null) {
    return {
      program: null,
      dir: null,
      skip:
        `cannot install ${pinned.pkg}@${pinned.version}: the npm registry cannot be reached (${unreachable})`,
    };
  }
  await Deno.mkdir(cacheRoot(), { recursive: true });
  const staging = `${dir}.installing-${Deno.pid}`;
  await Deno.remove(staging, { recursive: true }).catch(() => {});
  await Deno.mkdir(staging, { recursive: true });
  await Deno.writeTextFile(`${staging}/package.json`, '{ "private": true }\n');
  const started = performance.now();
  const install = await npm([
    "install",
    "--prefix",
    staging,
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    `${pinned.pkg}@${pinned.version}`,
  ], INSTALL_TIMEOUT_MS);
  if (!install.ok) {
    throw new Error(
      `Cannot install ${pinned.pkg}@${pinned.version} into ${staging}: ${install.output}`,
    );
  }
  if (await programIn(staging, driver) === null) {
    throw new Error(
      `Installed ${pinned.pkg}@${pinned.version} has no program for ${driver} in ${staging}`,
    );
  }
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.rename(staging, dir);
  console.warn(
    `interop: installed ${pinned.pkg}@${pinned.version} into ${dir} in ${
      Math.round((performance.now() - started) / 100) / 10
    } s`,
  );
  return { program: (await programIn(dir, driver))!, dir, skip: null };
}

/**
 * Registers `name` as a test when the CLI is installed, else as an ignored test whose name says
 * why, with a warning on stderr: a skipped interop suite must never look like a passing one.
 */
export function interopTest(
  installed: Installed,
  name: string,
  fn: (program: string) => Promise<void>,
): void {
  if (installed.skip !== null) {
    console.warn(`interop: SKIPPED "${name}": ${installed.skip}`);
    Deno.test({ name: `${name} [SKIPPED: ${installed.skip}]`, ignore: true, fn: () => {} });
    return;
  }
  const program = installed.program;
  Deno.test({ name, fn: () => fn(program) });
}
