// Sandboxes kept ready for the next turn, in a process that runs turns back to back (`reins
// serve`): when an agent takes the sandbox started ahead for it (warm.ts), another made the same
// way is started, with bridges of its own, for the next turn whose sandbox would be made the same
// (the same working directory and harness state, by path and inode, the same things hidden, the
// same environment kept, the same allowed hosts: confinement.ts's print). A turn of another
// context with a harness state of its own, another working directory, another config, a secret
// store that has appeared since: none of these matches, and its turn starts its own. A sandbox
// kept ready has run nothing (no agent was in it: its /tmp and home are as made), and it serves
// one agent, then is the turn's, which ends it. One kept too long is ended; no more than so many
// are kept.

/** What is kept: a turn's confinement opened ahead (confinement.ts's OpenConfinement). */
export interface Kept {
  /** Whether its sandbox is still there for an agent. */
  readonly waiting: boolean;
  close(): Promise<void>;
}

export interface ReadyOptions {
  /** How long one is kept for a turn that does not come (ms); 30 s by default. */
  idleMs?: number;
  /** How many are kept at most (then none more is started until one goes); 4 by default. */
  most?: number;
}

interface Spare<T> {
  opening: Promise<T | null>;
  timer: ReturnType<typeof setTimeout>;
}

export class ReadySandboxes<T extends Kept = Kept> implements AsyncDisposable {
  readonly #idleMs: number;
  readonly #most: number;
  /** By print. */
  readonly #spares = new Map<string, Spare<T>>();
  readonly #ending = new Set<Promise<void>>();
  #closed = false;

  constructor(options: ReadyOptions = {}) {
    this.#idleMs = options.idleMs ?? 30_000;
    this.#most = options.most ?? 4;
  }

  /** How many are kept now (started, or being started). */
  get size(): number {
    return this.#spares.size;
  }

  /**
   * Starts one for turns of `print` (by `open`), unless one is kept for them already. It is not
   * waited for: one that cannot be opened is no loss (the turn opens its own, and meets, and
   * reports, the same trouble).
   */
  prepare(print: string, open: () => Promise<T>): void {
    // Full, none is started: ending one kept for a turn still to come, to start another that may
    // be no likelier to be used, would only spend a sandbox's start.
    if (this.#closed || this.#spares.has(print) || this.#spares.size >= this.#most) return;
    const opening = open().catch(() => null);
    const timer = setTimeout(() => this.#end(print), this.#idleMs);
    Deno.unrefTimer(timer);
    this.#spares.set(print, { opening, timer });
  }

  /** The one kept for `print`, if there is one whose sandbox is still waiting: then the caller's. */
  async take(print: string): Promise<T | null> {
    const spare = this.#spares.get(print);
    if (spare === undefined) return null;
    this.#spares.delete(print);
    clearTimeout(spare.timer);
    const open = await spare.opening;
    if (open === null) return null;
    if (open.waiting) return open;
    this.#track(open.close());
    return null;
  }

  /** Whether it was closed: it keeps no more. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Ends every one kept, and keeps no more. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const print of [...this.#spares.keys()]) this.#end(print);
    while (this.#ending.size > 0) await Promise.all(this.#ending);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #end(print: string): void {
    const spare = this.#spares.get(print);
    if (spare === undefined) return;
    this.#spares.delete(print);
    clearTimeout(spare.timer);
    this.#track(spare.opening.then((open) => open?.close()));
  }

  #track(ending: Promise<void>): void {
    const job = ending.catch(() => {}).finally(() => this.#ending.delete(job));
    this.#ending.add(job);
  }
}
