// An outbox: one JSON file per entry in a folder of the data root (`<id>.json`, 0600), written
// atomically before anything is sent and rewritten after each step the receiver acknowledged, held
// by a lock on `<id>.lock` while it is sent (an entry sent in many steps may instead note how many
// went in `<id>.progress`, a few bytes written atomically after each, so that a large entry is not
// rewritten at every step) (the OS drops it if its holder dies), removed once
// sent. Ids are uuid v7, so entries list oldest first. The platform's reports
// (platform/outbox.ts) and the OpenTelemetry exports (otel/outbox.ts) are two outboxes: each
// gives the schema its entries are checked against and where they lie; how an entry is sent, and
// what a failed send leaves in it, is theirs.
import type { z } from "zod";
import { nowIso } from "../core/clock.ts";
import { isSafeName } from "../core/ids.ts";
import type { Layout } from "../core/mod.ts";
import type { DataRoot } from "./data_root.ts";

/** What every entry has: its id (its file's name) and when it was last written. */
export interface OutboxEntryBase {
  id: string;
  updatedAt: string;
}

/** An entry as read: checked against its schema, or why it cannot be used. */
export type ReadOutboxEntry<T> = { ok: true; entry: T } | { ok: false; reason: string };

/** Where an outbox lies in the data root: its folder, an entry's file and its lock file. */
export interface OutboxPlace {
  folder(layout: Layout): string;
  entry(layout: Layout, id: string): string;
  lock(layout: Layout, id: string): string;
}

export interface OutboxOptions<T> {
  place: OutboxPlace;
  schema: z.ZodType<T>;
  /** The JSON's indentation (the platform's reports are read by people; traces are not). */
  indent?: number;
}

export class Outbox<T extends OutboxEntryBase> {
  readonly #place: OutboxPlace;
  readonly #schema: z.ZodType<T>;
  readonly #indent: number | undefined;

  constructor(options: OutboxOptions<T>) {
    this.#place = options.place;
    this.#schema = options.schema;
    this.#indent = options.indent;
  }

  /** Writes the entry (atomic replace, 0600, fsynced), stamping updatedAt. */
  write(root: DataRoot, entry: T): void {
    entry.updatedAt = nowIso();
    root.writeFileAtomic(this.#entryPath(root, entry.id), `${this.#text(entry)}\n`);
  }

  /**
   * The entry, null when it is gone (sent meanwhile), or why it cannot be used. A file someone
   * else could have written throws UntrustedFileError (DataRoot.readText).
   */
  read(root: DataRoot, id: string): ReadOutboxEntry<T> | null {
    const text = root.readText(this.#entryPath(root, id));
    if (text === null) return null;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      return { ok: false, reason: `it is not JSON: ${(error as Error).message}` };
    }
    const parsed = this.#schema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return { ok: false, reason: `${issue.message} at ${issue.path.join(".") || "(top)"}` };
    }
    return { ok: true, entry: parsed.data };
  }

  /**
   * Notes, durably (atomic replace, fsynced), how many steps of the entry the receiver
   * acknowledged; read back by progress() and removed with the entry.
   */
  writeProgress(root: DataRoot, id: string, steps: number): void {
    root.writeFileAtomic(this.#progressPath(root, id), `${steps}\n`);
  }

  /** The steps writeProgress() last noted for the entry: 0 when none (or unreadable). */
  progress(root: DataRoot, id: string): number {
    const text = root.readText(this.#progressPath(root, id));
    const steps = text === null ? NaN : Number(text.trim());
    return Number.isSafeInteger(steps) && steps > 0 ? steps : 0;
  }

  /** Ids of the entries, oldest first (ids are uuid v7); none when the folder does not exist. */
  ids(root: DataRoot): string[] {
    return root.list(this.#place.folder(root.layout))
      .filter((e) => e.isFile && e.name.endsWith(".json") && !e.name.startsWith("."))
      .map((e) => e.name.slice(0, -".json".length)).filter(isSafeName).sort();
  }

  /** Takes the entry's lock without waiting, or returns null when another holds it. */
  lock(root: DataRoot, id: string): Disposable | null {
    return root.lock(this.#place.lock(root.layout, id), { wait: false });
  }

  /**
   * Removes a sent entry, then its progress and lock files (either alone means nothing: ids are
   * never reused).
   */
  remove(root: DataRoot, id: string): void {
    root.remove(this.#entryPath(root, id));
    root.remove(this.#progressPath(root, id));
    root.remove(this.#place.lock(root.layout, id));
  }

  #entryPath(root: DataRoot, id: string): string {
    if (!isSafeName(id)) throw new RangeError(`Cannot use ${JSON.stringify(id)} as an outbox id`);
    return this.#place.entry(root.layout, id);
  }

  #progressPath(root: DataRoot, id: string): string {
    return `${this.#entryPath(root, id).replace(/\.json$/, "")}.progress`;
  }

  #text(entry: T): string {
    return this.#indent === undefined
      ? JSON.stringify(entry)
      : JSON.stringify(entry, null, this.#indent);
  }
}
