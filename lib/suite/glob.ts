// `--filter GLOB`: which scenarios to run, by key. `*` is any run of characters, `?` one, `[abc]`
// and `[a-z]` a class, `[!…]` its complement; a comma separates alternatives (`refund-*,login`).
// A key has no slashes, so there is no `**`.
import { UsageError } from "../core/errors.ts";

function globSource(glob: string): string {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") out += ".*";
    else if (c === "?") out += ".";
    else if (c === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end < 0) {
        throw new UsageError(`--filter ${JSON.stringify(glob)} has a '[' without its ']'`);
      }
      let body = glob.slice(i + 1, end);
      const negate = body.startsWith("!");
      if (negate) body = body.slice(1);
      out += `[${negate ? "^" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
      i = end;
    } else out += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  return out;
}

/** A matcher for `--filter`; throws a UsageError for a glob it cannot read. */
export function globMatcher(filter: string): (key: string) => boolean {
  const parts = filter.split(",").map((part) => part.trim()).filter(Boolean);
  if (parts.length === 0) throw new UsageError("--filter needs a glob, e.g. 'refund-*'");
  const regex = new RegExp(`^(?:${parts.map(globSource).join("|")})$`);
  return (key) => regex.test(key);
}
