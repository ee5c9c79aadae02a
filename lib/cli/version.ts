// The version `reins --version` prints; tests check that it matches deno.json.
export const VERSION = "0.1.0";
