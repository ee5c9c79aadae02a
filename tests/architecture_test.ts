// The house holds: every import of lib/ goes along the room graph docs/architecture.md draws (no
// arrow upward or off the table, into another room only through its door) and no file of lib/
// reaches itself through its imports (code, types and lazy names alike). The graph is Deno's
// (`deno info --json`) plus the `importLazily` names, which Deno cannot see.
import assert from "node:assert/strict";
import { cycles, filesUnder, type Import, importGraph } from "./support/module_graph.ts";
import { listedIn, parseRooms, readRooms, roomCycle, roomProblems } from "./support/room_graph.ts";

const REPO = new URL("../", import.meta.url).pathname;

const graphOf = (imports: Map<string, Import[]>) =>
  new Map([...imports].map(([from, list]) => [from, [...new Set(list.map((i) => i.to))]]));

Deno.test("every room of lib/ is in the table, has a door, and the table has no cycle", async () => {
  const rooms = await readRooms();
  const dirs = [...Deno.readDirSync(`${REPO}lib`)].filter((e) => e.isDirectory).map((e) => e.name);
  assert.deepEqual([...rooms.keys()].sort(), dirs.sort());
  for (const [name, room] of rooms) {
    assert.ok((await Deno.stat(`${REPO}lib/${name}/mod.ts`)).isFile, `lib/${name}/mod.ts`);
    for (const listed of room.listed) {
      assert.ok((await Deno.stat(`${REPO}lib/${name}/${listed}`)).isFile, `lib/${name}/${listed}`);
    }
    for (const to of room.imports) assert.ok(rooms.has(to), `${name} imports unknown room ${to}`);
  }
  assert.equal(roomCycle(rooms), null);
});

Deno.test("lib/'s imports follow the room graph and go through the doors; no file cycles", async () => {
  const rooms = await readRooms();
  const graph = await importGraph(["main.ts", ...filesUnder("lib")]);
  assert.ok(graph.size > 100, `only ${graph.size} modules in the graph`);
  const problems = roomProblems(graph, rooms);
  const found = cycles(graphOf(graph)).map((cycle) => `cycle: ${cycle.join(" ↔ ")}`);
  assert.deepEqual([...problems, ...found], []);
});

// The guard can fail: a planted upward import, an import past a door and a planted cycle.
const TABLE = "```rooms\ncore:\nstore: core\ncli: core store\n```\n";
const DOORS = new Map([[
  "store",
  'export { openStore } from "./store.ts";\nexport type {\n  RunEvent,\n} from "./contracts.ts";\n',
]]);

Deno.test("roomProblems() finds an upward import, one past a door, and types past it", () => {
  const graph = new Map<string, Import[]>([
    ["lib/core/paths.ts", [{ to: "lib/store/mod.ts", kind: "type" }]],
    ["lib/cli/run.ts", [
      { to: "lib/store/list.ts", kind: "code" },
      { to: "lib/store/store.ts", kind: "code" },
      { to: "lib/store/contracts.ts", kind: "type" },
      { to: "lib/store/mod.ts", kind: "code" },
      { to: "lib/store/reconcile.ts", kind: "lazy" },
      { to: "lib/store/reconcile.ts", kind: "type" },
    ]],
    ["lib/cli/show.ts", [{ to: "lib/core/mod.ts", kind: "code" }]],
  ]);
  assert.deepEqual(roomProblems(graph, parseRooms(TABLE, DOORS)), [
    "lib/cli/run.ts → lib/store/list.ts: an import into store not through its door lib/store/mod.ts" +
    " (and not a module the door lists)",
    "lib/cli/run.ts → lib/store/contracts.ts: a type import into store not through its door " +
    "lib/store/mod.ts (only values may name a module the door lists; types come through the door)",
    "lib/core/paths.ts → lib/store/mod.ts: core may not import store (core may import: no room)",
  ]);
});

Deno.test("listedIn() reads the modules a door re-exports from, over several lines", () => {
  assert.deepEqual(listedIn(DOORS.get("store")!), ["store.ts", "contracts.ts"]);
});

Deno.test("cycles() finds a cycle between files and a file importing itself, not a diamond", () => {
  const graph = new Map([
    ["a.ts", ["b.ts", "d.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["e.ts"]],
    ["e.ts", []],
    ["f.ts", ["e.ts", "d.ts"]],
    ["g.ts", ["g.ts"]],
  ]);
  assert.deepEqual(cycles(graph), [["a.ts", "b.ts", "c.ts"], ["g.ts"]]);
});

Deno.test("roomCycle() finds a cycle in the table", () => {
  const rooms = parseRooms("```rooms\ncore: store\nstore: core\n```\n", new Map());
  assert.deepEqual(roomCycle(rooms), ["core", "store", "core"]);
});
