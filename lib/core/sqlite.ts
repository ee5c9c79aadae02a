// node:sqlite, loaded when the index is first needed rather than at start-up: `reins run` never
// opens the index, and importing node:sqlite statically cost every run ~2–3 ms (`deno task bench
// startup`, "node:sqlite"; a profile of a whole run put it at 2.8 ms). Code that may open the
// index awaits loadSqlite() first (the CLI does for every command but `run`; a turn that resumes
// a context does). Code that reaches the index without it still works: sqlite() then takes the
// module through Deno's Node `process`, which costs ~14 ms of CPU once per process.
import { importLazily } from "./lazy_import.ts";

type Sqlite = typeof import("node:sqlite");

// Process-wide on purpose: a built-in module, the same for every store.
let loaded: Sqlite | null = null;

/** Loads node:sqlite, once per process. */
export async function loadSqlite(): Promise<void> {
  loaded ??= await importLazily<Sqlite>("node:sqlite");
}

/** node:sqlite, loaded by loadSqlite() or, failing that, here and now (see above). */
export function sqlite(): Sqlite {
  loaded ??= (globalThis as unknown as {
    process: { getBuiltinModule(name: string): unknown };
  }).process.getBuiltinModule("node:sqlite") as Sqlite;
  return loaded;
}
