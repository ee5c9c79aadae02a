// Reading a request body whole, under a cap. A declared length over the cap is refused before a
// byte of the body is read; a chunked body is refused as soon as what it decodes to passes the
// cap, or its bytes on the wire (chunk framing included, which a sender could pad without end)
// pass the cap plus the slack. Reads are sized so that the socket never gives up more than that.
// The body is gathered in one buffer, allocated whole for a declared length and grown in place,
// a step at a time, to what has come for a chunked one, never as a list of pieces: a body of a
// million one-byte chunks costs its bytes, not a million small arrays.
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
  const body = new Uint8Array(length);
  let at = 0;
  while (true) {
    at += reader.moveTo(body, at, length - at);
    if (at === length) return body;
    if (!(await reader.fill(length - at))) {
      throw new HttpError(400, "The body ended before Content-Length");
    }
  }
}

/** How much a chunked body's buffer grows by at a time (and its first size). */
export const BODY_STEP = 16 * 1024;

/**
 * A body gathered in one resizable buffer reserved up to the cap, which grows in place as it
 * fills, to what it holds rounded up to BODY_STEP: growing leaves no old copy behind for the
 * collector, so it need not double ahead of the body (a 170 KB body held 256 KiB that way).
 */
export class GrowingBody {
  readonly #buffer: ArrayBuffer;
  readonly #bytes: Uint8Array;
  #length = 0;

  constructor(cap: number) {
    this.#buffer = new ArrayBuffer(Math.min(cap, BODY_STEP), { maxByteLength: cap });
    // Length-tracking: the view follows the buffer's resizes.
    this.#bytes = new Uint8Array(this.#buffer);
  }

  /** Moves up to `count` bytes from the reader; the caller checked the cap. How many. */
  moveFrom(reader: ConnReader, count: number): number {
    const needed = this.#length + Math.min(count, reader.length);
    if (needed > this.#buffer.byteLength) {
      const size = Math.ceil(needed / BODY_STEP) * BODY_STEP;
      this.#buffer.resize(Math.min(size, this.#buffer.maxByteLength));
    }
    const moved = reader.moveTo(this.#bytes, this.#length, count);
    this.#length += moved;
    return moved;
  }

  /** The bytes its buffer holds room for now (what it grew to). */
  get capacity(): number {
    return this.#buffer.byteLength;
  }

  /** The body, in the buffer it was gathered in (cut to its length). */
  bytes(): Uint8Array {
    this.#buffer.resize(this.#length);
    return this.#bytes;
  }
}

const isBlank = (byte: number) => byte === 0x20 || byte === 0x09;

/**
 * The size the chunk-size line at the reader's front (`end` bytes long) gives: 1 to 8 hex
 * digits, blanks around them, an extension after ';' ignored. Read byte by byte: a string or a
 * view per chunk would be an allocation per chunk of a body of tiny chunks.
 */
function chunkSize(reader: ConnReader, end: number): number {
  let at = 0;
  while (at < end && isBlank(reader.byteAt(at))) at++;
  let size = 0;
  let digits = 0;
  for (; at < end; at++, digits++) {
    const byte = reader.byteAt(at);
    const lower = byte | 0x20; // an ASCII letter in lower case
    const digit = byte >= 0x30 && byte <= 0x39
      ? byte - 0x30
      : lower >= 0x61 && lower <= 0x66
      ? lower - 0x57
      : -1;
    if (digit < 0) break;
    size = size * 16 + digit;
  }
  while (at < end && isBlank(reader.byteAt(at))) at++;
  if (digits === 0 || digits > 8 || (at < end && reader.byteAt(at) !== 0x3b)) {
    throw new HttpError(400, "A chunk size is not hex");
  }
  return size;
}

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
  const body = new GrowingBody(limits.maxBodyBytes);
  let total = 0;
  while (true) {
    let at = reader.crlfIndex();
    while (at < 0) {
      if (reader.length > MAX_CHUNK_LINE) throw new HttpError(400, "A chunk-size line is too long");
      await more();
      at = reader.crlfIndex();
    }
    const size = chunkSize(reader, at);
    reader.consume(at + 2);
    if (size === 0) break;
    if (total + size > limits.maxBodyBytes) throw bodyTooLarge(limits);
    // The chunk's data is copied out as it comes, so that the reader's buffer stays small.
    let left = size;
    while (true) {
      left -= body.moveFrom(reader, left);
      if (left === 0) break;
      await more();
    }
    while (reader.length < 2) await more();
    if (reader.byteAt(0) !== CRLF[0] || reader.byteAt(1) !== CRLF[1]) {
      throw new HttpError(400, "A chunk does not end with CRLF");
    }
    reader.consume(2);
    total += size;
  }
  // Trailer fields, up to the blank line.
  let trailerBytes = 0;
  while (true) {
    let at = reader.crlfIndex();
    while (at < 0) {
      if (reader.length > MAX_TRAILERS) throw new HttpError(431, "The trailer fields are too long");
      await more();
      at = reader.crlfIndex();
    }
    reader.consume(at + 2);
    if (at === 0) break;
    trailerBytes += at + 2;
    if (trailerBytes > MAX_TRAILERS) throw new HttpError(431, "The trailer fields are too long");
  }
  return body.bytes();
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
