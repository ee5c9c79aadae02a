// Files a run keeps for the platform (`reins run --attach FILE`): copied into the run's
// attachments/ directory (0700) as a 0600 file, hashed while copied, and described by the payload
// of an `attachment.added` event, its content type included. It does not append the event: the
// run's one writer does. Loads node:crypto, so Store.attachFile imports it only when a file is
// attached.
import { createHash } from "node:crypto";
import { NotFoundError, UsageError } from "../core/errors.ts";
import { basenameOf, joinPath, resolvePath } from "../core/paths.ts";
import type { PayloadOf } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";

const CONTENT_TYPES: Record<string, string> = {
  wav: "audio/wav",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  webm: "audio/webm",
  m4a: "audio/mp4",
  flac: "audio/flac",
  json: "application/json",
  jsonl: "application/jsonl",
};

/** The content type an attachment (a recording, for the platform) has, from its extension. */
export function contentTypeFor(name: string): string {
  const dot = name.lastIndexOf(".");
  const extension = dot < 0 ? "" : name.slice(dot + 1).toLowerCase();
  return CONTENT_TYPES[extension] ?? "application/octet-stream";
}

/** A file name safe as one path segment, keeping as much of `name` as it can. */
function storedName(name: string): string {
  let safe = name.normalize("NFKD").replace(/\p{M}+/gu, "").replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/\.{2,}/g, ".")
    .replace(/^[^A-Za-z0-9]+/, "").replace(/\.+$/, "");
  if (safe.length > 100) {
    const dot = safe.lastIndexOf(".");
    const extension = dot > 0 && safe.length - dot <= 10 ? safe.slice(dot) : "";
    safe = safe.slice(0, 100 - extension.length) + extension;
  }
  return safe || "attachment";
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Copies `sourcePath` into the run's `runs/<runId>/attachments/` and returns the payload of its
 * `attachment.added` event: `name` is the file's own name (what the platform will see), `path`
 * is where the copy is, relative to the run's directory. A name taken by an earlier attachment
 * gets a numbered copy; nothing is overwritten.
 */
export async function attachFile(
  root: DataRoot,
  runId: string,
  sourcePath: string,
  options: { name?: string } = {},
): Promise<PayloadOf<"attachment.added">> {
  const source = resolvePath(sourcePath);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(source);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`Cannot attach ${JSON.stringify(sourcePath)}: no such file`, {
        hint: "give the path of an existing file to --attach",
      });
    }
    throw error;
  }
  if (!info.isFile) {
    throw new UsageError(`Cannot attach ${JSON.stringify(sourcePath)}: it is not a regular file`, {
      hint: "attach one file at a time (--attach can be repeated)",
    });
  }
  const name = options.name ?? basenameOf(source);
  const dir = root.layout.attachments(runId);
  root.ensureDir(dir);
  const stem = storedName(name);
  const dot = stem.lastIndexOf(".");
  const [base, extension] = dot > 0 ? [stem.slice(0, dot), stem.slice(dot)] : [stem, ""];
  let stored = stem;
  for (let n = 2; exists(joinPath(dir, stored)); n++) stored = `${base}-${n}${extension}`;
  const target = joinPath(dir, stored);

  const hash = createHash("sha256");
  let bytes = 0;
  const input = await Deno.open(source, { read: true });
  try {
    // Fails rather than replace a file another attach made meanwhile.
    await root.createFileAsync(target, async (output) => {
      const buffer = new Uint8Array(1 << 20);
      while (true) {
        const got = await input.read(buffer);
        if (got === null) break;
        const chunk = buffer.subarray(0, got);
        hash.update(chunk);
        let written = 0;
        while (written < got) written += await output.write(chunk.subarray(written));
        bytes += got;
      }
    });
  } finally {
    input.close();
  }
  return {
    name,
    path: `attachments/${stored}`,
    contentType: contentTypeFor(name),
    bytes,
    sha256: hash.digest("hex"),
  };
}
