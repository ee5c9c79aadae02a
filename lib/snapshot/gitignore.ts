// .gitignore patterns as git reads them (gitignore(5)), so a snapshot leaves out what the
// project leaves out of version control: `*` and `?` within a segment, `[…]` classes, `**` across
// segments, a leading or middle `/` anchoring to the file's directory, a trailing `/` for
// directories only, `!` re-including, `\` escaping, the last matching line winning and a deeper
// file overriding a shallower one. It does not read .git/info/exclude or core.excludesFile: a
// snapshot follows what the project itself says, not one person's setup.

export interface IgnoreRule {
  /** Matches a path relative to the directory of the file the rule came from. */
  regex: RegExp;
  negated: boolean;
  dirOnly: boolean;
}

function escapeRegex(char: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(char) ? `\\${char}` : char;
}

/** A `[…]` class at `at` (the `[`) as a regex class and where it ends, or null if unclosed. */
function readClass(pattern: string, at: number): { regex: string; end: number } | null {
  let i = at + 1;
  let negated = false;
  if (pattern[i] === "!" || pattern[i] === "^") {
    negated = true;
    i++;
  }
  let body = "";
  // A `]` right after the opening (or its negation) is a literal member.
  if (pattern[i] === "]") {
    body += "\\]";
    i++;
  }
  for (; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === "]") return { regex: `[${negated ? "^" : ""}${body}]`, end: i };
    if (char === "\\" && i + 1 < pattern.length) {
      body += `\\${pattern[++i]}`;
    } else if (char === "/") {
      return null;
    } else {
      body += char === "-" ? "-" : escapeRegex(char);
    }
  }
  return null;
}

/** One segment-aware glob as a regex source: `*`, `?`, `[…]` stay within a segment. */
function globSource(glob: string): string {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i];
    if (char === "\\" && i + 1 < glob.length) {
      out += escapeRegex(glob[++i]);
    } else if (char === "*") {
      out += "[^/]*";
    } else if (char === "?") {
      out += "[^/]";
    } else if (char === "[") {
      const cls = readClass(glob, i);
      if (cls === null) out += "\\[";
      else {
        out += cls.regex;
        i = cls.end;
      }
    } else {
      out += escapeRegex(char);
    }
  }
  return out;
}

/** Removes unescaped trailing spaces (git ignores them; `\ ` keeps one). */
function trimTrailing(line: string): string {
  let end = line.length;
  while (end > 0 && line[end - 1] === " ") {
    let slashes = 0;
    for (let i = end - 2; i >= 0 && line[i] === "\\"; i--) slashes++;
    if (slashes % 2 === 1) break;
    end--;
  }
  return line.slice(0, end);
}

/** One line of a .gitignore as a rule, or null for a blank line or a comment. */
export function parseIgnoreLine(raw: string): IgnoreRule | null {
  let line = trimTrailing(raw.replace(/\r$/, ""));
  if (line === "" || line.startsWith("#")) return null;
  let negated = false;
  if (line.startsWith("!")) {
    negated = true;
    line = line.slice(1);
  } else if (line.startsWith("\\!") || line.startsWith("\\#")) {
    line = line.slice(1);
  }
  let dirOnly = false;
  if (line.endsWith("/") && !line.endsWith("\\/")) {
    dirOnly = true;
    line = line.replace(/\/+$/, "");
  }
  if (line === "") return null;
  // A slash anywhere but at the end anchors the pattern to the .gitignore's directory.
  const anchored = line.includes("/");
  if (line.startsWith("/")) line = line.slice(1);
  const segments = line.split("/");
  let source = "";
  for (const [index, segment] of segments.entries()) {
    const last = index === segments.length - 1;
    if (segment === "**") {
      if (index === 0) source += last ? ".*" : "(?:.*/)?";
      else if (last) source += "/.*";
      else source += "/(?:.*/)?";
      continue;
    }
    if (index > 0 && segments[index - 1] !== "**") source += "/";
    source += globSource(segment);
  }
  const prefix = anchored ? "^" : "^(?:.*/)?";
  return { regex: new RegExp(`${prefix}${source}$`), negated, dirOnly };
}

/** The rules of one .gitignore file's text, in order. */
export function parseIgnoreFile(text: string): IgnoreRule[] {
  return text.split("\n").map(parseIgnoreLine).filter((rule): rule is IgnoreRule => rule !== null);
}

/**
 * The rules in force for a directory tree: each .gitignore's rules apply to paths below its
 * directory. Paths are relative to the tree's root, with "/" separators.
 */
export class IgnoreRules {
  readonly #levels: { dir: string; rules: IgnoreRule[] }[] = [];

  /** Adds the rules of the .gitignore in `dir` ("" for the root). Deeper dirs come later. */
  add(dir: string, rules: IgnoreRule[]): void {
    if (rules.length > 0) this.#levels.push({ dir, rules });
  }

  /** Whether `path` (a directory when `isDir`) is ignored. */
  ignores(path: string, isDir: boolean): boolean {
    let ignored = false;
    for (const { dir, rules } of this.#levels) {
      if (dir !== "" && !path.startsWith(`${dir}/`)) continue;
      const relative = dir === "" ? path : path.slice(dir.length + 1);
      for (const rule of rules) {
        if (rule.dirOnly && !isDir) continue;
        if (rule.regex.test(relative)) ignored = !rule.negated;
      }
    }
    return ignored;
  }
}
