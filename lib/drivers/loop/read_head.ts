// Reads the first bytes of a file and no more: what the loop's read_file shows the model costs at
// most the limit in memory, whatever the file's size (a 2 GiB file read whole and then cut cost
// 4 GB). It refuses what is not a regular file before opening it: opening a FIFO waits for a
// writer for ever, and a device never ends. It does not decide what is text; looksBinary does.

export interface FileHead {
  /** At most `limit` bytes from the start of the file; when cut, not in the middle of a UTF-8
   * character. */
  bytes: Uint8Array;
  /** The file's size as stat tells it, or, when it grew past that, at least what was seen. */
  size: number;
  /** Whether the file holds more than `bytes`. */
  cut: boolean;
}

/** Why a path cannot be read as a file; the message says what it is instead. */
export class NotAFileError extends Error {
  constructor(readonly kind: "directory" | "special") {
    super(
      kind === "directory"
        ? "it is a directory"
        : "it is not a regular file (a FIFO, a socket or a device)",
    );
    this.name = "NotAFileError";
  }
}

/**
 * Reads at most `limit` bytes of `path`, in one buffer of at most limit + 1 bytes. The buffer
 * starts at the size stat gives and grows only when the file holds more than that (one that
 * grows while read, or one of /proc's that says 0).
 */
export async function readHead(path: string, limit: number): Promise<FileHead> {
  const info = await Deno.stat(path);
  if (info.isDirectory) throw new NotAFileError("directory");
  if (!info.isFile) throw new NotAFileError("special");
  // One byte past the limit tells a file that is exactly `limit` long from a longer one.
  const most = limit + 1;
  let buffer = new Uint8Array(Math.min(most, Math.max(info.size, 0) + 1));
  let got = 0;
  using file = await Deno.open(path, { read: true });
  // What was opened, not what stat saw: a device put in its place meanwhile (a terminal waits
  // for input) is refused before anything is read. A FIFO would have held the open itself.
  if (!(await file.stat()).isFile) throw new NotAFileError("special");
  for (;;) {
    if (got === buffer.length) {
      if (buffer.length === most) break;
      const grown = new Uint8Array(Math.min(most, Math.max(buffer.length * 2, 4096)));
      grown.set(buffer);
      buffer = grown;
    }
    const n = await file.read(buffer.subarray(got));
    if (n === null) break;
    got += n;
  }
  const cut = got > limit;
  const kept = cut ? utf8CutPoint(buffer.subarray(0, got), limit) : got;
  return { bytes: buffer.subarray(0, kept), size: Math.max(info.size, got), cut };
}

/**
 * Where to cut `bytes` at or before `end` so as not to split a UTF-8 sequence: a character cut
 * in two would reach the model as a replacement character.
 */
export function utf8CutPoint(bytes: Uint8Array, end: number): number {
  if (end >= bytes.length) return bytes.length;
  // Back over continuation bytes (10xxxxxx) to the lead byte of the sequence `end` falls in.
  let at = end;
  while (at > 0 && end - at < 3 && (bytes[at] & 0xc0) === 0x80) at--;
  return (bytes[at] & 0xc0) === 0x80 ? end : at;
}

/** Whether `bytes` look like a binary file's: a NUL byte, as git and grep decide. */
export function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 8000).includes(0);
}
