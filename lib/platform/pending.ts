// What the outbox holds, for `reins doctor` and other quick looks: reports not yet acknowledged
// and reports the platform refused. Cheap on purpose (no zod, no network, no lock): it reads each
// entry's few fields and never changes anything. outbox.ts owns the format.
import { joinPath } from "../core/paths.ts";
import type { DataRoot } from "../store/mod.ts";

export interface PendingReport {
  /** The outbox id; the file is `outbox/<id>.json`. */
  id: string;
  path: string;
  name: string | null;
  runIds: string[];
  /** When it was written or last tried. */
  updatedAt: string | null;
  /** Why it is still there: the last error, if any. */
  reason: string | null;
}

export interface PendingReports {
  /** To be sent by `reins report --pending`. */
  pending: PendingReport[];
  /** Refused by the platform (a 4xx other than 408/429): not retried. */
  refused: PendingReport[];
  /** Entries that cannot be read, as `outbox/<file>: why`. */
  unreadable: string[];
}

/** The reports in the data root's outbox/, oldest first. A missing outbox is an empty one. */
export function pendingReports(root: DataRoot): PendingReports {
  const dir = root.layout.outbox();
  const out: PendingReports = { pending: [], refused: [], unreadable: [] };
  const names = root.list(dir).filter((e) => e.isFile && e.name.endsWith(".json"))
    .map((e) => e.name).filter((name) => !name.startsWith(".")).sort();
  for (const name of names) {
    const path = joinPath(dir, name);
    const untrusted = root.trustProblem(path);
    if (untrusted !== null) {
      out.unreadable.push(`outbox/${name}: ${untrusted}; it is not sent`);
      continue;
    }
    let raw: Record<string, unknown>;
    try {
      const text = root.readText(path);
      if (text === null) continue;
      const value = JSON.parse(text);
      if (value === null || typeof value !== "object" || value.type !== "reins.platform-report") {
        out.unreadable.push(`outbox/${name}: not a reins report`);
        continue;
      }
      raw = value;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      out.unreadable.push(`outbox/${name}: ${(error as Error).message.split("\n")[0]}`);
      continue;
    }
    const calls = Array.isArray(raw.calls) ? raw.calls : [];
    const report: PendingReport = {
      id: name.slice(0, -".json".length),
      path,
      name: typeof raw.name === "string" ? raw.name : null,
      runIds: calls.map((c) => (c as { runId?: unknown })?.runId).filter(
        (id): id is string => typeof id === "string",
      ),
      updatedAt: typeof raw.updatedAt === "string" ? raw.updatedAt : null,
      reason: typeof raw.lastError === "string" ? raw.lastError : null,
    };
    (raw.state === "refused" ? out.refused : out.pending).push(report);
  }
  return out;
}
