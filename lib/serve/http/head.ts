// The head of an HTTP/1.1 request (RFC 9112): request line and header fields, checked strictly
// enough that what reaches the handler has one meaning. Ambiguous framing (Content-Length with
// Transfer-Encoding, differing lengths, folded lines, stray CR or LF) is refused rather than
// guessed at, since that is what request smuggling through a proxy in front lives on.

const decoder = new TextDecoder();
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADER_FIELDS = 100;

/** An HTTP-level refusal: answered with `status` and the message as plain text, then closed. */
export class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "HttpError";
    this.status = status;
  }
}

export interface RequestHead {
  method: string;
  /** The request target as sent. */
  target: string;
  /** The path of the target, without the query. */
  path: string;
  /** The query string, without its `?` ("" when none). */
  query: string;
  version: "1.0" | "1.1";
  /** Field names lower-cased; repeated fields joined with ", ". */
  headers: Map<string, string>;
  /** Whether the connection may carry another request after this one. */
  keepAlive: boolean;
  /** The declared body length; null with chunked encoding or no body. */
  contentLength: number | null;
  chunked: boolean;
  expectContinue: boolean;
}

/** Parses a head (the bytes before the blank line that ends it, without that CRLF CRLF). */
export function parseHead(bytes: Uint8Array): RequestHead {
  const text = decoder.decode(bytes);
  const lines = text.split("\r\n");
  const requestLine = lines[0];
  const match = /^([^ ]+) ([^ ]+) HTTP\/1\.([01])$/.exec(requestLine);
  if (match === null || !TOKEN.test(match[1])) {
    if (/^[^ ]+ [^ ]+ HTTP\/\d/.test(requestLine)) {
      throw new HttpError(505, "Only HTTP/1.0 and HTTP/1.1 are served here");
    }
    throw new HttpError(400, "The request line is not METHOD TARGET HTTP/1.1");
  }
  const [, method, target, minor] = match;
  const version = minor === "1" ? "1.1" : "1.0";
  const headers = new Map<string, string>();
  if (lines.length - 1 > MAX_HEADER_FIELDS) {
    throw new HttpError(431, `A request may have at most ${MAX_HEADER_FIELDS} header fields`);
  }
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.includes("\r") || line.includes("\n")) {
      throw new HttpError(400, "A header line holds a bare CR or LF");
    }
    if (line.startsWith(" ") || line.startsWith("\t")) {
      throw new HttpError(400, "Folded header lines are not accepted");
    }
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon);
    if (!TOKEN.test(name)) throw new HttpError(400, "A header line is not NAME: VALUE");
    const value = line.slice(colon + 1).trim();
    const key = name.toLowerCase();
    const seen = headers.get(key);
    headers.set(key, seen === undefined ? value : `${seen}, ${value}`);
  }
  if (version === "1.1" && !headers.has("host")) {
    throw new HttpError(400, "An HTTP/1.1 request needs a Host header");
  }

  let contentLength: number | null = null;
  const lengthField = headers.get("content-length");
  if (lengthField !== undefined) {
    const values = new Set(lengthField.split(",").map((v) => v.trim()));
    const [only] = values;
    if (values.size !== 1 || !/^\d{1,15}$/.test(only)) {
      throw new HttpError(400, "Content-Length must be one decimal number");
    }
    contentLength = Number(only);
  }
  let chunked = false;
  const coding = headers.get("transfer-encoding");
  if (coding !== undefined) {
    if (version === "1.0") throw new HttpError(400, "HTTP/1.0 has no Transfer-Encoding");
    if (contentLength !== null) {
      throw new HttpError(400, "A request may not have both Content-Length and Transfer-Encoding");
    }
    if (coding.toLowerCase() !== "chunked") {
      throw new HttpError(501, "The only transfer coding accepted is chunked");
    }
    chunked = true;
  }

  const connection = (headers.get("connection") ?? "").toLowerCase();
  const keepAlive = version === "1.1"
    ? !/(^|,)\s*close\s*(,|$)/.test(connection)
    : /(^|,)\s*keep-alive\s*(,|$)/.test(connection);

  let path = target;
  let query = "";
  if (!target.startsWith("/")) {
    // absolute-form (`POST http://host/ HTTP/1.1`), which a server must accept
    try {
      const url = new URL(target);
      path = url.pathname;
      query = url.search.slice(1);
    } catch {
      throw new HttpError(400, "The request target is neither a path nor an absolute URL");
    }
  } else {
    const at = target.indexOf("?");
    if (at >= 0) {
      path = target.slice(0, at);
      query = target.slice(at + 1);
    }
  }

  return {
    method,
    target,
    path,
    query,
    version,
    headers,
    keepAlive,
    contentLength,
    chunked,
    expectContinue: (headers.get("expect") ?? "").toLowerCase() === "100-continue",
  };
}
