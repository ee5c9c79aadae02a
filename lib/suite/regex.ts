// The regular expressions of suite files: JavaScript syntax, plus the leading inline flags that
// people bring from Python, PCRE and Go (`(?i)sorry|apolog`), which JavaScript has no syntax for
// outside a group. Nothing else is translated: a pattern either compiles as written or is refused.

/** The flags a leading `(?…)` may set; `u` is always on, so `\p{…}` works. */
const INLINE_FLAGS = /^\(\?([ims]+)\)/;

export type CompiledRegex = { ok: true; regex: RegExp } | { ok: false; reason: string };

/** Compiles a suite file's pattern, or says why it cannot be used. */
export function compileRegex(pattern: string): CompiledRegex {
  let source = pattern;
  let flags = "u";
  const inline = INLINE_FLAGS.exec(pattern);
  if (inline) {
    source = pattern.slice(inline[0].length);
    flags += [...new Set(inline[1])].join("");
  }
  try {
    return { ok: true, regex: new RegExp(source, flags) };
  } catch (error) {
    const detail = (error as Error).message.replace(/^Invalid regular expression: /, "");
    return { ok: false, reason: `invalid regular expression (${detail})` };
  }
}
