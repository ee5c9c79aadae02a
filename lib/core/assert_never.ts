// The end of every exhaustive switch (STYLE.md, habit 3): the type checker proves the branch
// unreachable, and if a value from outside the types (a newer file, a bug) gets there anyway it
// fails loudly with what it was, instead of falling through.

/** Throws for a value the switch before it should have handled; `what` names the kind of value. */
export function assertNever(value: never, what = "value"): never {
  const tagged = typeof value === "object" && value !== null && "type" in value;
  const shown = tagged ? (value as { type: unknown }).type : value;
  throw new TypeError(`Unhandled ${what} ${JSON.stringify(shown)}`);
}
