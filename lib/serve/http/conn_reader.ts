// Buffered reading from one connection, with at most one read outstanding at any time: the server
// reads heads and bodies through it, and while it streams a response it leaves a read pending to
// notice the client going away — the next request then picks up that same read instead of racing
// it. Reads go straight into the buffer, which starts small (an idle kept-alive connection costs
// a few KiB) and grows only for a body. It counts every byte it took off the socket, which is
// what the body limits are held to.

const INITIAL_SIZE = 4 * 1024;
const READ_SIZE = 64 * 1024;

export class ConnReader {
  readonly #conn: Deno.Conn;
  #data = new Uint8Array(INITIAL_SIZE);
  #start = 0;
  #end = 0;
  #pending: Promise<boolean> | null = null;
  #eof = false;
  /** Bytes read off the socket since the connection opened. */
  bytesRead = 0;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** The unconsumed bytes (a view: valid until the next fill or consume). */
  get buffered(): Uint8Array {
    return this.#data.subarray(this.#start, this.#end);
  }

  get length(): number {
    return this.#end - this.#start;
  }

  get eof(): boolean {
    return this.#eof;
  }

  /** The unconsumed byte at `index` (0 first), without making a view. */
  byteAt(index: number): number {
    return this.#data[this.#start + index];
  }

  /** The index (0 first) of the first CRLF in the unconsumed bytes, or -1; makes no view. */
  crlfIndex(): number {
    let from = this.#start;
    while (true) {
      const at = this.#data.indexOf(13, from);
      if (at < 0 || at + 1 >= this.#end) return -1;
      if (this.#data[at + 1] === 10) return at - this.#start;
      from = at + 1;
    }
  }

  /** Copies up to `count` unconsumed bytes to `target` at `offset`, consumes them; how many. */
  moveTo(target: Uint8Array, offset: number, count: number): number {
    const moved = Math.min(count, this.#end - this.#start);
    if (moved < 32) {
      // A few bytes (a body of tiny chunks): copied one by one rather than through a view each.
      for (let i = 0; i < moved; i++) target[offset + i] = this.#data[this.#start + i];
    } else {
      target.set(this.#data.subarray(this.#start, this.#start + moved), offset);
    }
    this.consume(moved);
    return moved;
  }

  /** Drops `count` bytes from the front of the buffer. */
  consume(count: number): void {
    this.#start += count;
    if (this.#start !== this.#end || this.#pending !== null) return;
    this.#start = this.#end = 0;
    // A body grew the buffer: give it back rather than hold it for an idle keep-alive.
    if (this.#data.length > READ_SIZE) this.#data = new Uint8Array(INITIAL_SIZE);
  }

  /**
   * Reads once more from the socket, at most `max` bytes (or joins the read already under way).
   * False at the end of the stream; throws when the connection fails or is closed under it.
   */
  fill(max: number = READ_SIZE): Promise<boolean> {
    if (this.#eof) return Promise.resolve(false);
    this.#pending ??= this.#read(Math.max(1, Math.min(max, READ_SIZE))).finally(() =>
      this.#pending = null
    );
    return this.#pending;
  }

  /** Whether a read is under way (started by fill() and not yet finished). */
  get reading(): boolean {
    return this.#pending !== null;
  }

  async #read(max: number): Promise<boolean> {
    this.#makeRoom(max);
    // Nothing moves the buffer while this read is pending (consume keeps it while one is).
    const at = this.#end;
    const room = Math.min(max, this.#data.length - at);
    const got = await this.#conn.read(this.#data.subarray(at, at + room));
    if (got === null) {
      this.#eof = true;
      return false;
    }
    this.bytesRead += got;
    this.#end = at + got;
    return true;
  }

  /** Room after the live bytes: moved to the front, or grown, when a read needs it. */
  #makeRoom(wanted: number): void {
    const free = this.#data.length - this.#end;
    const live = this.#end - this.#start;
    if (free >= Math.min(wanted, INITIAL_SIZE) && free > 0) return;
    if (this.#start > 0 && this.#start >= live) {
      // At most half the buffer is live, so at least half is free once it is moved to the
      // front: enough for the next read. (Asking for a whole INITIAL_SIZE free here grew the
      // buffer to 68 KiB whenever a few bytes were left over, as a chunk split by a read leaves
      // them, and the grown buffer was dropped once emptied: a body of one-byte chunks left a
      // 68 KiB array for the collector every 64 KiB it read, ~1.2 MB per connection.)
      this.#data.copyWithin(0, this.#start, this.#end);
      this.#start = 0;
      this.#end = live;
      return;
    }
    const grown = new Uint8Array(
      Math.max(this.#data.length * 2, live + Math.min(wanted, READ_SIZE)),
    );
    grown.set(this.#data.subarray(this.#start, this.#end));
    this.#data = grown;
    this.#start = 0;
    this.#end = live;
  }
}
