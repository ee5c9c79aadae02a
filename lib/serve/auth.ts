// The bearer token that guards `reins serve`: read from --token-file, or generated on first start
// into the data root (`serve.token`, 0600) and reused after. Checking a presented token takes the
// same time whatever it matches of the real one, so its prefix cannot be found by timing answers.
import { UsageError } from "../core/errors.ts";
import { distrustOf, UntrustedFileError } from "../core/trust.ts";

/** The part of the store the token lives in (a DataRoot). */
export interface TokenHome {
  readonly layout: { serveToken(): string };
  readText(path: string): string | null;
  writeFileAtomic(path: string, data: string | Uint8Array): void;
}
/** Tokens shorter than this are refused: they could be guessed over the network. */
export const MIN_TOKEN_LENGTH = 16;

export interface ServeToken {
  token: string;
  /** Where it came from. */
  path: string;
  /** True when this start made it. */
  generated: boolean;
}

function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

function checkToken(token: string, path: string): string {
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new UsageError(
      `The token in ${path} is ${token.length} characters long: at least ${MIN_TOKEN_LENGTH} are needed`,
      { hint: "put a long random string in it, e.g. from: openssl rand -base64 32" },
    );
  }
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new UsageError(`The token in ${path} holds spaces, control or non-ASCII characters`, {
      hint: "a bearer token is one line of printable ASCII characters",
    });
  }
  return token;
}

/**
 * The token of --token-file (its first line, trimmed). A file another user owns or that group or
 * others may write is refused (UntrustedFileError, as for the data root's files: someone else
 * could have chosen the token); one they may read is used, and `warn` is told.
 */
export function readTokenFile(
  path: string,
  warn: (message: string) => void = () => {},
): ServeToken {
  let text: string;
  try {
    const info = Deno.statSync(path);
    const distrust = distrustOf(info);
    if (distrust !== null) throw new UntrustedFileError(path, distrust);
    if (info.mode !== null && (info.mode & 0o044) !== 0) {
      const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
      warn(
        `the token file ${path} may be read by ${
          (info.mode & 0o044) === 0o044
            ? "group and others"
            : info.mode & 0o040
            ? "its group"
            : "others"
        } (mode ${mode}): anyone who reads it can use this server; chmod 600 ${path}`,
      );
    }
    text = Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof UntrustedFileError) throw error;
    throw new UsageError(`Cannot read the token file ${path}: ${(error as Error).message}`, {
      hint: "give --token-file a readable file holding the bearer token on its first line",
      cause: error,
    });
  }
  return { token: checkToken(text.split("\n")[0].trim(), path), path, generated: false };
}

/** The data root's token (`serve.token`), made (0600) when there is none yet. */
export function dataRootToken(home: TokenHome): ServeToken {
  const path = home.layout.serveToken();
  const existing = home.readText(path);
  if (existing !== null && existing.trim() !== "") {
    return { token: checkToken(existing.split("\n")[0].trim(), path), path, generated: false };
  }
  // As bytes: text is redacted on its way to a file, and a random token may look like a key.
  home.writeFileAtomic(path, new TextEncoder().encode(`${newToken()}\n`));
  // Two servers starting at once each write one: the file's is the token, whoever wrote last.
  const written = (home.readText(path) ?? "").split("\n")[0].trim();
  return { token: checkToken(written, path), path, generated: true };
}

/** Checks `Authorization: Bearer …` headers against one token. */
export class BearerCheck {
  readonly #token: string;

  constructor(token: string) {
    this.#token = token;
  }

  /**
   * Whether the header value presents the token. The comparison takes the same time whatever
   * the token holds: every character is compared, with no early exit, and the loop runs over the
   * presented value's length, which the client knows anyway.
   */
  allows(authorization: string | undefined): boolean {
    if (authorization === undefined) return false;
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    const presented = match ? match[1] : "";
    const token = this.#token;
    let difference = presented.length ^ token.length;
    for (let i = 0; i < presented.length; i++) {
      difference |= presented.charCodeAt(i) ^ token.charCodeAt(i % token.length);
    }
    return difference === 0 && match !== null;
  }
}
