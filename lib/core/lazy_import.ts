// Importing a module of reins only when it is needed, for real. Deno reads and parses, at
// start-up, every module a statically analyzable `import("./x.ts")` can reach — the whole
// program, from the command table — whether or not it is ever imported: importing
// lib/cli/main.ts took 22 ms that way (timed once, when this was written) and takes ~3 ms with the
// command modules imported through a URL built at run time, which Deno loads only when the
// import runs (`deno task bench startup`, "lib/cli/main.ts").
// scripts/compile.ts includes lib/ in the binary, where such imports are resolved. The type
// argument keeps the import typed: `typeof import("./x.ts")` is a type, loaded by nothing.
export function importLazily<T>(url: URL): Promise<T> {
  return import(url.href);
}
