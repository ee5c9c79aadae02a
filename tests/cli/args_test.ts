// parseArgs(): the command line's flags, declared once with their types, read back typed — and
// every bad flag refused with a line that names it.
import assert from "node:assert/strict";
import fc from "fast-check";
import { defineFlags, parseArgs, valueHint } from "../../lib/cli/args.ts";

const specs = defineFlags({
  context: { type: "string", value: "ID" },
  attach: { type: "string", multiple: true, value: "FILE" },
  events: { type: "boolean" },
  verbose: { type: "boolean", short: "v" },
  timeout: { type: "number", positive: true, value: "SECONDS" },
  "max-usd": { type: "number" },
  limit: { type: "integer", min: 1, max: 100 },
  approve: { type: "choice", choices: ["auto", "ask", "deny"] },
});

const parse = (...argv: string[]) => parseArgs(argv, specs, "run");
const usage = (message: RegExp) => ({ name: "UsageError", message });

Deno.test("parseArgs() gives every flag its declared type, absent ones their empty value", () => {
  const { flags, positionals } = parse();
  assert.deepEqual({ ...flags }, {
    json: false,
    quiet: false,
    help: false,
    attach: [],
    events: false,
    verbose: false,
  });
  for (const name of ["home", "context", "timeout", "max-usd", "limit", "approve"] as const) {
    assert.equal(flags[name], undefined, name);
  }
  assert.deepEqual(positionals, []);
});

Deno.test("parseArgs() reads --name value, --name=value, short aliases and repeated flags", () => {
  const { flags, positionals } = parse(
    "fix it",
    "--context",
    "ticket-1",
    "--attach=a.txt",
    "--attach",
    "b.txt",
    "-v",
    "--timeout=2.5",
    "--max-usd",
    "0",
    "--limit",
    "100",
    "--approve",
    "ask",
    "--events",
    "-q",
    "--home=/data",
  );
  assert.equal(flags.context, "ticket-1");
  assert.deepEqual(flags.attach, ["a.txt", "b.txt"]);
  assert.equal(flags.verbose, true);
  assert.equal(flags.timeout, 2.5);
  assert.equal(flags["max-usd"], 0);
  assert.equal(flags.limit, 100);
  assert.equal(flags.approve, "ask");
  assert.equal(flags.events, true);
  assert.equal(flags.quiet, true);
  assert.equal(flags.home, "/data");
  assert.deepEqual(positionals, ["fix it"]);
});

Deno.test("parseArgs() takes '-' as a positional and everything after '--' as positionals", () => {
  const { flags, positionals } = parse("-", "--events", "--", "--context", "x", "-v");
  assert.equal(flags.events, true);
  assert.equal(flags.context, undefined);
  assert.deepEqual(positionals, ["-", "--context", "x", "-v"]);
});

Deno.test("parseArgs() takes a boolean as --name, --name=true or --name=false, nothing else", () => {
  assert.equal(parse("--events=false").flags.events, false);
  assert.equal(parse("--events=true").flags.events, true);
  assert.throws(() => parse("--events=yes"), usage(/^--events takes no value: got "yes"$/));
});

Deno.test("parseArgs() refuses a flag with no value, and a value that is itself a flag", () => {
  assert.throws(() => parse("--context"), usage(/^--context needs a value$/));
  assert.throws(() => parse("--context", "--events"), usage(/^--context needs a value$/));
  // A value may start with a dash as long as it is not a long flag.
  assert.equal(parse("--context", "-x").flags.context, "-x");
  assert.equal(parse("--context", "--").flags.context, "--");
});

Deno.test("parseArgs() checks numbers, whole numbers and choices, naming the flag and the value", () => {
  assert.throws(
    () => parse("--timeout", "0"),
    usage(/^--timeout takes a number more than 0: got "0"$/),
  );
  assert.throws(() => parse("--timeout", "soon"), usage(/^--timeout takes a number more than 0/));
  assert.throws(
    () => parse("--max-usd=-1"),
    usage(/^--max-usd takes a non-negative number: got "-1"$/),
  );
  assert.throws(() => parse("--max-usd", " "), usage(/^--max-usd takes a non-negative number/));
  assert.throws(() => parse("--max-usd", "Infinity"), usage(/non-negative number/));
  assert.throws(
    () => parse("--limit", "0"),
    usage(/^--limit takes a whole number from 1 to 100: got "0"$/),
  );
  assert.throws(() => parse("--limit", "101"), usage(/from 1 to 100: got "101"/));
  assert.throws(() => parse("--limit", "2.5"), usage(/from 1 to 100: got "2.5"/));
  assert.throws(
    () => parse("--approve", "aks"),
    (error: Error & { hint?: string }) => {
      assert.equal(error.message, '--approve takes auto, ask or deny: got "aks"');
      assert.equal(error.hint, "did you mean --approve ask?");
      return true;
    },
  );
});

Deno.test("parseArgs() refuses an unknown flag, suggesting the nearest one", () => {
  assert.throws(
    () => parse("--contxt", "x"),
    (error: Error & { hint?: string }) => {
      assert.equal(error.message, "Unknown flag --contxt for 'reins run'");
      assert.equal(error.hint, "did you mean --context? (see reins run --help)");
      return true;
    },
  );
  assert.throws(() => parse("-z"), usage(/^Unknown flag -z for 'reins run'$/));
});

// regression: a flag named like an Object.prototype member was looked up on the prototype
Deno.test("parseArgs() knows no flag an object inherits (--constructor, --toString)", () => {
  assert.throws(() => parse("--constructor"), usage(/^Unknown flag --constructor/));
  assert.throws(() => parse("--toString=x"), usage(/^Unknown flag --toString/));
});

Deno.test("parseArgs() reads any string value the same as --name=value and as --name value", () => {
  fc.assert(
    fc.property(
      fc.string().filter((value) => !(value.startsWith("--") && value.length > 2)),
      (value) => {
        assert.equal(parse(`--context=${value}`).flags.context, value);
        assert.equal(parse("--context", value).flags.context, value);
        assert.deepEqual(parse("--attach", value, `--attach=${value}`).flags.attach, [
          value,
          value,
        ]);
      },
    ),
  );
});

Deno.test("parseArgs() reads back any whole number in bounds, and refuses any outside them", () => {
  fc.assert(
    fc.property(fc.integer({ min: -1000, max: 1000 }), (n) => {
      if (n >= 1 && n <= 100) assert.equal(parse("--limit", String(n)).flags.limit, n);
      else assert.throws(() => parse("--limit", String(n)), usage(/^--limit takes a whole number/));
    }),
  );
});

Deno.test("valueHint() shows a flag's placeholder, its choices, or nothing for a boolean", () => {
  assert.equal(valueHint(specs.context), "ID");
  assert.equal(valueHint(specs.approve), "auto|ask|deny");
  assert.equal(valueHint(specs["max-usd"]), "VALUE");
  assert.equal(valueHint(specs.events), null);
});
