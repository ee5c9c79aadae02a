// The launcher's cache of sandboxes: scripts/reins.sh finds an invocation's flags here and starts
// Deno once, not twice (once for sandbox_flags.ts, once for main.ts). An entry is named by the
// SHA-256 of everything the flags are computed from that reins.sh can see without Deno (the Deno
// and checkout, the start directory, the command line less what names nothing, SANDBOX_ENV), and
// holds the `sha256sum` lines of the code that computes them and of the config file, which
// reins.sh hashes again on every start. Nothing is stored that a fresh computation might not give
// again: each line reins.sh hashed is checked here against what was actually read.

import { ENV_VARS } from "../lib/core/env.ts";

/** The first line of an entry, then its key's first 16 hex digits; reins.sh reads only these. */
export const CACHE_FORMAT = "reins launcher cache 1";

/**
 * Entries kept at most (each well under a KiB); past it the older half goes. A start that read an
 * entry removed meanwhile stops with "run again" (main.ts checks the entry it runs under).
 */
const MAX_ENTRIES = 1000;

export interface CacheRequest {
  /** The entry's path: the cache directory and the key's hex SHA-256, as reins.sh made them. */
  entry: string;
  /**
   * What reins.sh hashed besides the key, as `sha256sum` printed it: `HEX  PATH`, the code's
   * paths relative to the checkout, the config file's as reins.sh named it. Files that could not
   * be read have no line.
   */
  sums: string;
  /** The config file reins.sh hashed. */
  config: string;
}

export interface CacheContent {
  /** The config file read, absolute, and what was read (null: nothing). */
  config: { path: string; bytes: Uint8Array | null };
  startDir: string;
  /** REINS_SANDBOX's value. */
  origin: string;
  flags: string[];
}

const CHECKOUT = new URL("../", import.meta.url).pathname;

/** The --allow-env of every sandbox (permissions.ts), which reins.sh spells out for `env`. */
export const ALLOW_ENV = `--allow-env=${ENV_VARS.join(",")}`;

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

function normalized(path: string, from: string): string {
  const parts: string[] = [];
  for (const part of (path.startsWith("/") ? path : `${from}/${path}`).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

const IMPORT =
  /^\s*(?:import|export)\s[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|^\s*import\s*["'](\.{1,2}\/[^"']+)["']/gm;

/**
 * The local modules `entry` loads before it runs (its static imports, and theirs), as paths
 * relative to the checkout. A dynamic import is not followed: what one loads (reins suite's
 * reader) makes an invocation that is not cached.
 */
export function staticModules(entry: URL): string[] {
  const seen = new Set<string>();
  const visit = (url: URL) => {
    if (seen.has(url.href)) return;
    seen.add(url.href);
    for (const match of Deno.readTextFileSync(url).matchAll(IMPORT)) {
      visit(new URL(match[1] ?? match[2], url));
    }
  };
  visit(entry);
  return [...seen].map((href) => new URL(href).pathname.slice(CHECKOUT.length)).sort();
}

/** `HEX  PATH` lines → PATH → HEX; null for a line sha256sum would not print for a plain name. */
function parseSums(sums: string): Map<string, string> | null {
  const byPath = new Map<string, string>();
  for (const line of sums.split("\n")) {
    const match = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
    if (match === null) return null;
    byPath.set(match[2], match[1]);
  }
  return byPath;
}

/**
 * Why what reins.sh hashed is not what the flags were computed from (a file changed between the
 * two, a module it does not hash, another config file), or null when it is.
 */
export async function staleness(
  request: CacheRequest,
  content: CacheContent,
): Promise<string | null> {
  const sums = parseSums(request.sums);
  if (sums === null) return "reins.sh's sums cannot be read";
  for (const module of staticModules(new URL("./sandbox_flags.ts", import.meta.url))) {
    const hashed = sums.get(module);
    if (hashed === undefined) return `reins.sh does not hash ${module}`;
    if (hashed !== await sha256(Deno.readFileSync(`${CHECKOUT}${module}`))) {
      return `${module} changed meanwhile`;
    }
  }
  if (normalized(request.config, content.startDir) !== normalized(content.config.path, "/")) {
    return `reins.sh hashed the config file ${request.config}, not ${content.config.path}`;
  }
  const hashed = sums.get(request.config);
  const read = content.config.bytes === null ? undefined : await sha256(content.config.bytes);
  if (hashed !== read) return `the config file ${content.config.path} changed meanwhile`;
  return null;
}

/** The cache directory, made private; null when it is not this user's own. */
function privateDir(dir: string): string | null {
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const info = Deno.lstatSync(dir);
  if (!info.isDirectory || info.uid !== Deno.uid()) return null;
  if ((info.mode! & 0o077) !== 0) Deno.chmodSync(dir, 0o700);
  return dir;
}

/**
 * Stores the flags of an invocation where reins.sh will look for them, when what reins.sh hashed
 * is what they were computed from; says whether it did. A line that reins.sh could not read back
 * as one (a path with a newline) is not stored.
 */
export async function storeEntry(request: CacheRequest, content: CacheContent): Promise<boolean> {
  const key = request.entry.slice(request.entry.lastIndexOf("/") + 1);
  if (!/^[0-9a-f]{64}$/.test(key) || await staleness(request, content) !== null) return false;
  // Short, for a shell that reads a byte a time: 16 hex digits of each SHA-256 reins.sh compares
  // (a file's content changed by chance keeps them with a chance of 2^-64), and `env` for the
  // --allow-env every sandbox has, which reins.sh holds itself.
  const lines = [
    `${CACHE_FORMAT} ${key.slice(0, 16)}`,
    `deps ${request.sums.split("\n").map((line) => line.slice(0, 16)).join(" ")}`,
    `origin ${content.origin}`,
    ...content.flags.map((flag) => flag === ALLOW_ENV ? "env" : flag),
  ];
  if (lines.some((line) => line.includes("\n") || line.includes("\r"))) return false;
  const dir = privateDir(request.entry.slice(0, request.entry.lastIndexOf("/")));
  if (dir === null) return false;
  const names = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  if (names.length >= MAX_ENTRIES) {
    const byAge = names.map((name) => ({
      name,
      mtimeMs: Deno.lstatSync(`${dir}/${name}`).mtime?.getTime() ?? 0,
    })).sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const { name } of byAge.slice(0, byAge.length >> 1)) {
      Deno.removeSync(`${dir}/${name}`, { recursive: true });
    }
  }
  // Written beside and renamed: a reins starting meanwhile reads all of it or none.
  const temp = `${request.entry}.${Deno.pid}.tmp`;
  try {
    Deno.removeSync(temp, { recursive: true }); // left by a launcher of the same pid that died
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  Deno.writeTextFileSync(temp, `${lines.join("\n")}\n`, { mode: 0o600, createNew: true });
  Deno.renameSync(temp, request.entry);
  return true;
}
