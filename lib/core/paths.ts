// POSIX path helpers for the start-up path. `node:path` costs each command ~8 ms of CPU to load
// (`deno task bench startup`), and reins only ever joins a data root with safe segments, so
// these few are enough.
// Not a general path library: no Windows drive letters or UNC paths.

/** Joins segments with "/", collapsing repeated separators; keeps a leading "/". */
export function joinPath(...segments: string[]): string {
  const joined = segments.filter((s) => s.length > 0).join("/");
  return normalizePath(joined);
}

// Something normalizing would change: "//", a "." or ".." segment, a trailing "/" (not the root).
const NOT_NORMAL = /\/\/|(?:^|\/)\.\.?(?:\/|$)|.\/$/;

/** Removes "." segments, resolves ".." lexically and collapses "//". */
export function normalizePath(path: string): string {
  // Nearly every path is normal already (the store builds them from safe names): one test, not
  // a split and a join. `reins stats` of 1,000 runs normalizes eight paths a run.
  if (path !== "" && !NOT_NORMAL.test(path)) return path;
  const absolute = path.startsWith("/");
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
      continue;
    }
    out.push(part);
  }
  const body = out.join("/");
  return absolute ? `/${body}` : body || ".";
}

/** An absolute, normalised form of `path`, relative ones taken from `base` (default: cwd). */
export function resolvePath(path: string, base?: string): string {
  if (path.startsWith("/")) return normalizePath(path);
  return normalizePath(`${base ?? Deno.cwd()}/${path}`);
}

export function dirnameOf(path: string): string {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  const at = trimmed.lastIndexOf("/");
  if (at < 0) return ".";
  if (at === 0) return "/";
  return trimmed.slice(0, at);
}

export function basenameOf(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

/** Whether `path` is `parent` or lies below it (both absolute and normalised). */
export function isInside(path: string, parent: string): boolean {
  if (parent === "/") return path.startsWith("/");
  return path === parent || path.startsWith(`${parent}/`);
}
