// What a snapshot of a run's starting working directory is on disk: content-addressed blobs
// (blobs.ts: each content once, in a pack, shared by every run that saw the same bytes) and one
// manifest per run (snapshots/manifests/<run id>.json, 0600) that lists each path with its
// mode, size and sha256 (and where its content is), or says why no snapshot was taken. take.ts writes them; restore.ts
// and diff.ts read them (the data root's layout names the files).
import { z } from "zod";
import type { DataRoot } from "../store/mod.ts";

export const MANIFEST_TYPE = "reins.snapshot";

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
/** Relative, "/"-separated, no "." or ".." segment, no leading "/", no NUL (no file has one). */
const RelativePath = z.string().min(1).refine(
  (path) =>
    !path.startsWith("/") && !path.includes("\0") &&
    path.split("/").every((s) => s !== "" && s !== "." && s !== ".."),
  { message: "not a relative path inside the directory" },
);

export const SnapshotEntry = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("file"),
    path: RelativePath,
    /** Permission bits (mode & 0o7777). */
    mode: z.number().int().min(0).max(0o7777),
    size: z.number().int().nonnegative(),
    sha256: Sha256,
    /** Where the content is: a pack (blobs.ts) and the offset in it. */
    pack: z.string().min(1),
    offset: z.number().int().nonnegative(),
  }).strict(),
  z.object({
    type: z.literal("dir"),
    path: RelativePath,
    mode: z.number().int().min(0).max(0o7777),
  }).strict(),
  z.object({
    type: z.literal("symlink"),
    path: RelativePath,
    /** The link's text, as readlink gives it (not followed). */
    target: z.string(),
  }).strict(),
]);
export type SnapshotEntry = z.infer<typeof SnapshotEntry>;

export const SnapshotManifest = z.object({
  type: z.literal(MANIFEST_TYPE),
  version: z.literal(1),
  runId: z.string().min(1),
  /** The directory it was taken of, absolute. */
  cwd: z.string().min(1),
  takenAt: z.iso.datetime({ offset: true }),
  /** "skipped": over the cap or unreadable; `reason` says which. */
  state: z.enum(["taken", "skipped"]),
  reason: z.string().nullable(),
  /** Regular files and their total size (what the cap counts). */
  files: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  /** Paths left out: .git, what .gitignore ignores, and kinds of file that cannot be kept. */
  leftOut: z.number().int().nonnegative(),
  /** Of leftOut, the names that are not UTF-8 (reins cannot name them); absent: none. */
  nonUtf8Names: z.number().int().positive().optional(),
  /** Bytes this snapshot added to the blob store (0 when every blob was there already). */
  storedBytes: z.number().int().nonnegative(),
  entries: z.array(SnapshotEntry).superRefine((entries, ctx) => {
    // Two entries of one path cannot both be restored: the manifest was changed by hand.
    const seen = new Map<string, number>();
    entries.forEach((entry, i) => {
      const earlier = seen.get(entry.path);
      if (earlier !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [i, "path"],
          message: `${JSON.stringify(entry.path)} is also the path of entries.${earlier}`,
        });
      }
      seen.set(entry.path, i);
    });
  }),
}).strict();
export type SnapshotManifest = z.infer<typeof SnapshotManifest>;

export type ReadManifest =
  | { ok: true; manifest: SnapshotManifest }
  | { ok: false; reason: string };

/** The manifest of `runId`, null when there is none, or why it cannot be used. */
export function readManifest(root: DataRoot, runId: string): ReadManifest | null {
  const text = root.readText(root.layout.snapshotManifest(runId));
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `it is not JSON: ${(error as Error).message}` };
  }
  const parsed = SnapshotManifest.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: `${issue.message} at ${issue.path.join(".") || "(top)"}` };
  }
  return { ok: true, manifest: parsed.data };
}
