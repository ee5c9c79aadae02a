// Keeps the loop's file tools inside the working directory. A path is resolved lexically first
// (`..`, absolute paths), then through the file system, so a symbolic link that points out of the
// directory is refused too. What it refuses becomes a tool error the model reads, never a crash.
// It does not guard against the tree changing between the check and the use.
import { isInside, resolvePath } from "../../core/paths.ts";

/** A path the model asked for that the tools will not touch; the message is for the model. */
export class ConfinementError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfinementError";
  }
}

export interface Confined {
  /** The real path to use (symbolic links of existing parents resolved). */
  path: string;
  /** The path relative to the working directory, as the model should read it. */
  relative: string;
}

/** Resolves `requested` inside `root` (absolute, real) or throws a ConfinementError. */
export async function confinePath(root: string, requested: string): Promise<Confined> {
  if (typeof requested !== "string" || requested.length === 0) {
    throw new ConfinementError("Cannot use an empty path");
  }
  if (requested.includes("\0")) throw new ConfinementError("Cannot use a path with a NUL byte");
  const lexical = resolvePath(requested, root);
  if (!isInside(lexical, root)) {
    throw new ConfinementError(
      `Cannot use ${JSON.stringify(requested)}: it resolves outside the working directory`,
    );
  }
  // Walk up to the deepest part that exists; only that part can hold a symbolic link.
  const missing: string[] = [];
  let existing = lexical;
  while (!(await exists(existing))) {
    const at = existing.lastIndexOf("/");
    missing.unshift(existing.slice(at + 1));
    existing = existing.slice(0, at) || "/";
  }
  let real: string;
  try {
    real = await Deno.realPath(existing);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new ConfinementError(
        `Cannot use ${JSON.stringify(requested)}: it is a symbolic link to nothing`,
      );
    }
    throw error;
  }
  if (!isInside(real, root)) {
    throw new ConfinementError(
      `Cannot use ${
        JSON.stringify(requested)
      }: a symbolic link leads outside the working directory`,
    );
  }
  const path = [real, ...missing].join("/");
  const relative = path === root ? "." : path.slice(root.length + 1);
  return { path, relative };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    if (error instanceof Deno.errors.NotADirectory) return false;
    throw error;
  }
}
