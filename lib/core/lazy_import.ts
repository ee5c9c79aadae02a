// Importing a module of reins only when it is needed, for real. Deno reads and parses, at
// start-up, every module a statically analyzable `import("./x.ts")` can reach — the whole
// program, from the command table — whether or not it is ever imported: importing
// lib/cli/main.ts took 22 ms that way (timed once, when this was written) and takes ~3 ms with the
// command modules imported through a specifier resolved at run time, which Deno loads only when
// the import runs (`deno task bench startup`, "lib/cli/main.ts").
//
// A lazy module is named by its path under lib/ ("cli/run.ts"), a `node:` module, or a package
// of deno.json's imports ("dax"). Run from the sources, the name is resolved here. In the bundle
// (scripts/bundle.ts, which `deno task compile` builds the binary from) the names cannot be
// resolved against files, so the bundle's entry hands over a loader per name it found in lib/ —
// literal imports, which the bundler splits into chunks loaded as late as these are — before
// anything runs. The type argument keeps the import typed: `typeof import("./x.ts")` is a type,
// loaded by nothing.

/** A bundle's loaders, by lazy name; set once by the bundle's entry, before runCli. */
let bundled: Readonly<Record<string, () => Promise<unknown>>> | null = null;

/**
 * What each name has loaded (or is loading), kept: a module is evaluated once whatever asks, but
 * asking again is not free — the specifier resolved, Deno's module map looked up, a promise made —
 * and a server or a suite asks for its driver's module on every turn. One that failed is asked
 * again.
 */
const loaded = new Map<string, Promise<unknown>>();

/** For the bundle's entry (scripts/bundle.ts) only: the loader of each lazy name in lib/. */
export function useBundledLoaders(loaders: Readonly<Record<string, () => Promise<unknown>>>): void {
  bundled = loaders;
  loaded.clear();
}

export function importLazily<T>(name: string): Promise<T> {
  const known = loaded.get(name);
  if (known !== undefined) return known as Promise<T>;
  const loading = load(name);
  loaded.set(name, loading);
  loading.catch(() => {
    if (loaded.get(name) === loading) loaded.delete(name);
  });
  return loading as Promise<T>;
}

function load(name: string): Promise<unknown> {
  if (bundled !== null) {
    const loader = bundled[name];
    if (loader === undefined) {
      // A lazy name scripts/bundle.ts did not find (built by concatenation, say): a defect of the
      // build, named so that it is found at once.
      return Promise.reject(new Error(`This build of reins has no module '${name}' to load`));
    }
    return loader();
  }
  // A `node:` module or a package: resolved (through deno.json's imports) as the import runs.
  return import(name.endsWith(".ts") ? new URL(`../${name}`, import.meta.url).href : name);
}
