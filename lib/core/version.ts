// The version reins reports (`reins --version`, the User-Agent of its outbound calls, doctor). It
// lives in core because lib/platform and lib/net need it too and must not import the CLI; a test
// checks that it matches deno.json.
export const VERSION = "0.1.0";
