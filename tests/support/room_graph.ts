// The rooms of lib/ and the arrows allowed between them, read from the table in
// docs/architecture.md (the one place the doc and tests/architecture_test.ts both use), and the
// check of a module graph against them.
import type { Import } from "./module_graph.ts";

const REPO = new URL("../../", import.meta.url).pathname;

export interface Room {
  /** The rooms this one may import, directly. */
  imports: string[];
  /** The modules of the room its door re-exports from ("store.ts", "loop/mod.ts"). */
  listed: string[];
}

/** The modules a door's text re-exports from (`export … from "./x.ts"`), relative to its room. */
export function listedIn(door: string): string[] {
  return [...door.matchAll(/^export\s[^;]*?\sfrom\s+"\.\/([^"]+\.ts)";/gms)].map((m) => m[1]);
}

/**
 * The table in docs/architecture.md's fenced `rooms` block, a line per room
 * (`room: imported rooms…`), with what each door lists: `doors` maps a room to its door's text.
 */
export function parseRooms(markdown: string, doors: Map<string, string>): Map<string, Room> {
  const block = markdown.match(/^```rooms\n([\s\S]*?)^```/m);
  if (!block) throw new Error("docs/architecture.md has no ```rooms block");
  const rooms = new Map<string, Room>();
  for (const raw of block[1].split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = line.match(/^([a-z_]+)\s*:\s*([a-z_ ]*?)\s*$/);
    if (!match) throw new Error(`docs/architecture.md, rooms block: cannot read '${line}'`);
    rooms.set(match[1], {
      imports: match[2].split(/\s+/).filter(Boolean),
      listed: listedIn(doors.get(match[1]) ?? ""),
    });
  }
  return rooms;
}

/** The table of docs/architecture.md, with the doors of lib/ as they are. */
export async function readRooms(): Promise<Map<string, Room>> {
  const doors = new Map<string, string>();
  for await (const entry of Deno.readDir(`${REPO}lib`)) {
    if (!entry.isDirectory) continue;
    const text = await Deno.readTextFile(`${REPO}lib/${entry.name}/mod.ts`).catch(() => "");
    doors.set(entry.name, text);
  }
  return parseRooms(await Deno.readTextFile(`${REPO}docs/architecture.md`), doors);
}

/** The room of a module under lib/ ("lib/store/list.ts" → "store"), or null outside lib/. */
export function roomOf(path: string): string | null {
  const match = path.match(/^lib\/([^/]+)\//);
  return match ? match[1] : null;
}

/** A cycle among the rooms' allowed arrows (the rooms in order), or null: the table must be a DAG. */
export function roomCycle(rooms: Map<string, Room>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const visit = (room: string, path: string[]): string[] | null => {
    if (state.get(room) === "done") return null;
    if (state.get(room) === "open") return [...path.slice(path.indexOf(room)), room];
    state.set(room, "open");
    for (const next of rooms.get(room)?.imports ?? []) {
      const found = visit(next, [...path, room]);
      if (found) return found;
    }
    state.set(room, "done");
    return null;
  };
  for (const room of rooms.keys()) {
    const found = visit(room, []);
    if (found) return found;
  }
  return null;
}

/**
 * Each import of `graph` against the rooms: an arrow to a room this one may not import (upward,
 * or sideways off the table), or into another room not through its door. Allowed into another
 * room: its door (`lib/<room>/mod.ts`), by any kind of import; a module the door lists (re-exports
 * from), by an import of values (types come through the door); any module, by a lazy name
 * (`importLazily`) — and the `typeof import(…)` that types that same name.
 */
export function roomProblems(graph: Map<string, Import[]>, rooms: Map<string, Room>): string[] {
  const problems: string[] = [];
  for (const [from, imports] of [...graph].sort(([a], [b]) => a.localeCompare(b))) {
    const source = roomOf(from);
    if (source === null) continue;
    if (!rooms.has(source)) {
      problems.push(`${from}: lib/${source}/ is not a room of docs/architecture.md's table`);
      continue;
    }
    const lazy = new Set(imports.filter((i) => i.kind === "lazy").map((i) => i.to));
    for (const { to, kind } of imports) {
      const target = roomOf(to);
      if (target === null || target === source) continue;
      const room = rooms.get(target);
      if (!room) {
        problems.push(`${from} → ${to}: lib/${target}/ is not a room of the table`);
        continue;
      }
      if (!rooms.get(source)!.imports.includes(target)) {
        problems.push(
          `${from} → ${to}: ${source} may not import ${target} (${source} may import: ${
            rooms.get(source)!.imports.join(", ") || "no room"
          })`,
        );
        continue;
      }
      const behind = to.slice(`lib/${target}/`.length);
      if (behind === "mod.ts") continue;
      if (kind === "lazy" || (kind === "type" && lazy.has(to))) continue;
      if (kind === "code" && room.listed.includes(behind)) continue;
      problems.push(
        `${from} → ${to}: ${
          kind === "type" ? "a type import" : "an import"
        } into ${target} not through its door lib/${target}/mod.ts${
          room.listed.includes(behind)
            ? " (only values may name a module the door lists; types come through the door)"
            : " (and not a module the door lists)"
        }`,
      );
    }
  }
  return problems;
}
