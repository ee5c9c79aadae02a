// The recording upload's body: `multipart/form-data` with a `file` part streamed from disk and a
// `sha256` part, laid out so its length is known before the first byte is sent. The file is
// read in fixed-size chunks (memory stays flat whatever its size) and hashed as it goes out: if
// its bytes differ from the digest it was attached with, the body stops before its last part,
// so the server can never take a changed file for a complete upload.
import { createHash } from "node:crypto";
import { ReinsError } from "../core/errors.ts";
import { contentTypeFor } from "../store/attachments.ts";

const encoder = new TextEncoder();

/**
 * A filename as it may stand inside `filename="…"`. `"`, CR and LF become %22, %0D and %0A (the
 * HTML form encoding that browsers and curl use); other control characters become %XX too (a NUL
 * makes some parsers refuse the part). A backslash is written as the quoted-pair `\\`: parsers of
 * RFC 7230 quoted strings (Django's, busboy) read it back as one backslash, while a raw backslash
 * before the closing quote would escape it and lose the part. Non-ASCII stays as UTF-8.
 */
export function escapeFilename(name: string): string {
  // deno-lint-ignore no-control-regex -- control characters are exactly what is escaped here
  return name.replace(/[\x00-\x1f\x7f"\\]/g, (char) => {
    if (char === "\\") return "\\\\";
    return `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;
  });
}

/** A boundary no file plausibly contains: 128 random bits. */
export function newBoundary(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `----reins${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export interface RecordingFile {
  /** Absolute path of the file to send. */
  path: string;
  /** The name the platform sees. */
  name: string;
  /** Defaults to contentTypeFor(name). */
  contentType?: string;
  /** Size in bytes, as recorded when the file was attached. */
  bytes: number;
  /** Lowercase hex sha256, as recorded when the file was attached. */
  sha256: string;
}

export interface MultipartLayout {
  boundary: string;
  /** The request's Content-Type header. */
  contentType: string;
  /** Everything before the file's bytes. */
  head: Uint8Array;
  /** Everything after them: the sha256 part and the closing delimiter. */
  tail: Uint8Array;
  /** head + file + tail, in bytes: the request's Content-Length. */
  length: number;
}

/** The fixed parts of the body around a file of `file.bytes` bytes. */
export function multipartLayout(file: RecordingFile, boundary = newBoundary()): MultipartLayout {
  const type = file.contentType || contentTypeFor(file.name);
  if (/[\r\n]/.test(type)) {
    throw new RangeError(`Cannot send the content type ${JSON.stringify(type)}`);
  }
  const head = encoder.encode(
    `--${boundary}\r\n` +
      `Content-Disposition: form-data; name="file"; filename="${escapeFilename(file.name)}"\r\n` +
      `Content-Type: ${type}\r\n\r\n`,
  );
  const tail = encoder.encode(
    `\r\n--${boundary}\r\n` +
      `Content-Disposition: form-data; name="sha256"\r\n\r\n` +
      `${file.sha256}\r\n--${boundary}--\r\n`,
  );
  return {
    boundary,
    contentType: `multipart/form-data; boundary=${boundary}`,
    head,
    tail,
    length: head.length + file.bytes + tail.length,
  };
}

/** A recording whose bytes are not those it was attached with. */
export class RecordingChangedError extends ReinsError {
  constructor(message: string) {
    super("conflict", message, {
      hint: "the file was modified after it was attached; attach it again to send the new bytes",
    });
    this.name = "RecordingChangedError";
  }
}

export interface BodyOptions {
  /** Bytes read from disk at a time. */
  chunkBytes?: number;
  /**
   * Yield a new buffer for every chunk. Needed when the consumer keeps chunks after asking for
   * the next (a ReadableStream does); a writer that finishes each chunk first can share one.
   */
  freshChunks?: boolean;
}

/**
 * The body, chunk by chunk: head, the file's first `file.bytes` bytes, tail. Throws
 * RecordingChangedError, before yielding the tail, if the file is shorter or longer than
 * recorded or its bytes hash to another digest.
 */
export async function* multipartBody(
  file: RecordingFile,
  layout: MultipartLayout,
  options: BodyOptions = {},
): AsyncGenerator<Uint8Array> {
  const chunkBytes = options.chunkBytes ?? 1 << 20;
  const handle = await Deno.open(file.path, { read: true });
  try {
    yield layout.head;
    const hash = createHash("sha256");
    let buffer = new Uint8Array(chunkBytes);
    let sent = 0;
    while (sent < file.bytes) {
      if (options.freshChunks) buffer = new Uint8Array(chunkBytes);
      const want = Math.min(chunkBytes, file.bytes - sent);
      const got = await handle.read(buffer.subarray(0, want));
      if (got === null) {
        throw new RecordingChangedError(
          `Cannot send the recording ${
            JSON.stringify(file.name)
          }: it has ${sent} bytes, not the ${file.bytes} it was attached with`,
        );
      }
      const chunk = buffer.subarray(0, got);
      hash.update(chunk);
      sent += got;
      yield chunk;
    }
    const probe = new Uint8Array(1);
    if ((await handle.read(probe)) !== null) {
      throw new RecordingChangedError(
        `Cannot send the recording ${
          JSON.stringify(file.name)
        }: it grew past the ${file.bytes} bytes it was attached with`,
      );
    }
    const digest = hash.digest("hex");
    if (digest !== file.sha256) {
      throw new RecordingChangedError(
        `Cannot send the recording ${
          JSON.stringify(file.name)
        }: its sha256 is ${digest}, not the ${file.sha256} it was attached with`,
      );
    }
    yield layout.tail;
  } finally {
    handle.close();
  }
}

/** The sha256 and size of a file, read in chunks. */
export async function sha256File(
  path: string,
  chunkBytes = 1 << 20,
): Promise<{ sha256: string; bytes: number }> {
  const handle = await Deno.open(path, { read: true });
  try {
    const hash = createHash("sha256");
    const buffer = new Uint8Array(chunkBytes);
    let bytes = 0;
    while (true) {
      const got = await handle.read(buffer);
      if (got === null) break;
      hash.update(buffer.subarray(0, got));
      bytes += got;
    }
    return { sha256: hash.digest("hex"), bytes };
  } finally {
    handle.close();
  }
}
