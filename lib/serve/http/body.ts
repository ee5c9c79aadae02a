// Reading a request body whole, under a cap. A declared length over the cap is refused before a
// byte of the body is read; a chunked body is refused as soon as what it decodes to passes the
// cap, or its bytes on the wire (chunk framing included, which a sender could pad without end)
// pass the cap plus the slack. Reads are sized so that the socket never gives up more than that.
import type { ConnReader } from "./conn_reader.ts";
import { HttpError } from "./head.ts";

export interface BodyLimits {
  /** The most a body may hold. */
  maxBodyBytes: number;
  /** What may be read off the socket beyond the cap (chunk framing, the read that finds out). */
  slackBytes: number;
}

const MAX_CHUNK_LINE = 1024;
const MAX_TRAILERS = 8 * 1024;
const CRLF = [13, 10];

export function bodyTooLarge(limits: BodyLimits): HttpError {
  return new HttpError(
    413,
    `The request body is larger than the ${limits.maxBodyBytes} bytes this server accepts`,
  );
}

/** Reads `length` bytes of body; the caller checked the length against the cap. */
async function readExactly(reader: ConnReader, length: number): Promise<Uint8Array> {
  while (reader.length < length) {
    if (!(await reader.fill())) throw new HttpError(400, "The body ended before Content-Length");
  }
  return reader.take(length);
}

/** The index of the first CRLF in the reader's buffer, or -1. */
function crlfAt(bytes: Uint8Array): number {
  let from = 0;
  while (true) {
    const at = bytes.indexOf(CRLF[0], from);
    if (at < 0 || at + 1 >= bytes.length) return -1;
    if (bytes[at + 1] === CRLF[1]) return at;
    from = at + 1;
  }
}

const decoder = new TextDecoder();

/** Reads a chunked body (RFC 9112 §7.1), trailers read and dropped. */
async function readChunked(reader: ConnReader, limits: BodyLimits): Promise<Uint8Array> {
  // Bytes of this body read off the socket: what was already buffered counts from the start.
  const startRead = reader.bytesRead - reader.length;
  const allowance = limits.maxBodyBytes + limits.slackBytes;
  const more = async () => {
    const left = allowance - (reader.bytesRead - startRead);
    if (left <= 0) throw bodyTooLarge(limits);
    if (!(await reader.fill(left))) throw new HttpError(400, "The chunked body ended early");
  };
  const parts: Uint8Array[] = [];
  let total = 0;
  while (true) {
    let at = crlfAt(reader.buffered);
    while (at < 0) {
      if (reader.length > MAX_CHUNK_LINE) throw new HttpError(400, "A chunk-size line is too long");
      await more();
      at = crlfAt(reader.buffered);
    }
    const line = decoder.decode(reader.buffered.subarray(0, at));
    const sizeText = line.split(";")[0].trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new HttpError(400, "A chunk size is not hex");
    const size = parseInt(sizeText, 16);
    reader.consume(at + 2);
    if (size === 0) break;
    if (total + size > limits.maxBodyBytes) throw bodyTooLarge(limits);
    while (reader.length < size + 2) await more();
    const data = reader.buffered;
    if (data[size] !== CRLF[0] || data[size + 1] !== CRLF[1]) {
      throw new HttpError(400, "A chunk does not end with CRLF");
    }
    parts.push(reader.take(size));
    reader.consume(2);
    total += size;
  }
  // Trailer fields, up to the blank line.
  let trailerBytes = 0;
  while (true) {
    let at = crlfAt(reader.buffered);
    while (at < 0) {
      if (reader.length > MAX_TRAILERS) throw new HttpError(431, "The trailer fields are too long");
      await more();
      at = crlfAt(reader.buffered);
    }
    reader.consume(at + 2);
    if (at === 0) break;
    trailerBytes += at + 2;
    if (trailerBytes > MAX_TRAILERS) throw new HttpError(431, "The trailer fields are too long");
  }
  if (parts.length === 1) return parts[0];
  const body = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    body.set(part, offset);
    offset += part.length;
  }
  return body;
}

/**
 * The body of a request whose head said how it is framed. Throws HttpError 413 when it is over
 * the cap, 400 when it is malformed or ends early.
 */
export function readBody(
  reader: ConnReader,
  framing: { contentLength: number | null; chunked: boolean },
  limits: BodyLimits,
): Promise<Uint8Array> {
  if (framing.chunked) return readChunked(reader, limits);
  const length = framing.contentLength ?? 0;
  if (length > limits.maxBodyBytes) return Promise.reject(bodyTooLarge(limits));
  if (length === 0) return Promise.resolve(new Uint8Array(0));
  return readExactly(reader, length);
}
