// Buffered reading from one connection, with at most one read outstanding at any time: the server
// reads heads and bodies through it, and while it streams a response it leaves a read pending to
// notice the client going away — the next request then picks up that same read instead of racing
// it. It counts every byte it took off the socket, which is what the body limits are held to.

const READ_SIZE = 64 * 1024;

export class ConnReader {
  readonly #conn: Deno.Conn;
  readonly #scratch = new Uint8Array(READ_SIZE);
  #data = new Uint8Array(READ_SIZE);
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

  /** Drops `count` bytes from the front of the buffer. */
  consume(count: number): void {
    this.#start += count;
    if (this.#start !== this.#end) return;
    this.#start = this.#end = 0;
    // A large body grew the buffer: give it back rather than hold it for an idle keep-alive.
    if (this.#data.length > 2 * READ_SIZE) this.#data = new Uint8Array(READ_SIZE);
  }

  /** Takes `count` bytes off the front, as a copy. */
  take(count: number): Uint8Array {
    const out = this.#data.slice(this.#start, this.#start + count);
    this.consume(count);
    return out;
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
    const got = await this.#conn.read(this.#scratch.subarray(0, max));
    if (got === null) {
      this.#eof = true;
      return false;
    }
    this.bytesRead += got;
    this.#append(this.#scratch.subarray(0, got));
    return true;
  }

  #append(bytes: Uint8Array): void {
    if (this.#end + bytes.length > this.#data.length) {
      const live = this.#end - this.#start;
      if (live + bytes.length <= this.#data.length) {
        this.#data.copyWithin(0, this.#start, this.#end);
      } else {
        const grown = new Uint8Array(Math.max(this.#data.length * 2, live + bytes.length));
        grown.set(this.#data.subarray(this.#start, this.#end));
        this.#data = grown;
      }
      this.#start = 0;
      this.#end = live;
    }
    this.#data.set(bytes, this.#end);
    this.#end += bytes.length;
  }
}
