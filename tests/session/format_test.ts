// The transcript formats against recorded runs (tests/fixtures/session/, made by
// record_fixtures.ts), compared whole with golden files. After a deliberate change of format:
//   deno test -A tests/session/format_test.ts -- --update
import assert from "node:assert/strict";
import type { RunRecord } from "../../lib/store/contracts.ts";
import { pendingDecisions } from "../../lib/store/decisions.ts";
import { RunTally } from "../../lib/session/stats.ts";
import { parseEventLog } from "../../lib/store/event_log.ts";
import {
  EventFormatter,
  formatFooter,
  formatPending,
  formatTranscript,
  joinOneLine,
  type ShowMode,
} from "../../lib/session/format.ts";

const FIXTURES = new URL("../fixtures/session/", import.meta.url).pathname;
const GOLDEN = new URL("./golden/", import.meta.url).pathname;
const UPDATE = Deno.args.includes("--update");

function loadFixture(name: string) {
  const record = JSON.parse(Deno.readTextFileSync(`${FIXTURES}${name}/run.json`)) as RunRecord;
  const read = parseEventLog(Deno.readTextFileSync(`${FIXTURES}${name}/events.jsonl`), record.id);
  assert.deepEqual(read.problems, [], `fixture ${name} has bad lines`);
  return { record, events: read.events };
}

function assertGolden(file: string, actual: string): void {
  const path = `${GOLDEN}${file}`;
  if (UPDATE) {
    Deno.writeTextFileSync(path, `${actual}\n`);
    return;
  }
  let expected: string;
  try {
    expected = Deno.readTextFileSync(path);
  } catch {
    throw new Error(`No golden file ${file}: run with -- --update to write it`);
  }
  assert.equal(`${actual}\n`, expected);
}

const FIXTURE_NAMES = ["loop_tools", "approval_waiting", "approval_denied", "command_agent"];
const MODES: ShowMode[] = ["short", "verbose"];

for (const name of FIXTURE_NAMES) {
  for (const mode of MODES) {
    Deno.test(`formatTranscript() renders the recorded ${name} run as its ${mode} golden file`, () => {
      const { record, events } = loadFixture(name);
      assertGolden(
        `${name}.${mode}.txt`,
        // A run still going is shown as it would be 3 s after it started.
        formatTranscript(
          record,
          events,
          pendingDecisions(events),
          mode,
          Date.parse(record.startedAt) + 3_000,
        ),
      );
    });
  }
}

Deno.test("EventFormatter.format() gives exactly one line per event in short mode", () => {
  for (const name of FIXTURE_NAMES) {
    const { record, events } = loadFixture(name);
    const formatter = new EventFormatter("short", record.startedAt);
    for (const event of events) {
      const line = formatter.format(event);
      assert.ok(!line.includes("\n"), `${name} #${event.sequence}: ${line}`);
      assert.ok(!/\p{Cc}/u.test(line), `${name} #${event.sequence} has a control`);
    }
  }
});

Deno.test("EventFormatter.format() shows newlines as ⏎ and escapes as ␛ in the one-line forms", () => {
  const { record, events } = loadFixture("loop_tools");
  const formatter = new EventFormatter("verbose", record.startedAt);
  const text = events.map((event) => formatter.format(event)).join("\n");
  assert.match(text, /Here is what I found in the working directory\.⏎⏎- notes\.txt/);
  assert.match(text, /said ␛\[31moops␛\[0m on stderr/);
});

Deno.test("EventFormatter.format() says how long a cut text was", () => {
  const { record, events } = loadFixture("loop_tools");
  const answer = events.find((event) =>
    event.type === "message.completed" &&
    event.payload.role === "assistant"
  )!;
  const full = (answer.payload as { text: string }).text;
  const line = new EventFormatter("short", record.startedAt).format(answer);
  assert.ok(line.endsWith(`…" (${full.length} chars)`), line);
});

Deno.test("formatPending() gives the command that answers each pending decision of an active run", () => {
  const { record, events } = loadFixture("approval_waiting");
  assert.deepEqual(formatPending(record, pendingDecisions(events)), [
    `waiting for approval approval-1 (write_file {"path":"report.md","content":"# Report\\n"}): ` +
    `reins approve ${record.id} approval-1 [--deny]`,
  ]);
});

Deno.test("formatPending() gives no command for a question a settled run left unanswered", () => {
  const { record, events } = loadFixture("command_agent");
  assert.deepEqual(formatPending(record, pendingDecisions(events)), [
    `question q1 ("Which directory⏎should I search?") was never answered: the run failed first`,
  ]);
});

// regression: a run waiting for approval was said to be "waiting for 20 ms so far" seconds later:
// the time was measured to its last event, and a waiting run writes none while it waits.
Deno.test("formatFooter() counts a run still going from its start to now, not to its last event", () => {
  const { record, events } = loadFixture("approval_waiting");
  const tally = new RunTally();
  for (const event of events) tally.add(event);
  const lastEventMs = Date.parse(events.at(-1)!.timestamp) - Date.parse(record.startedAt);
  assert.ok(lastEventMs < 1_000, "the fixture's last event came within a second");
  const started = Date.parse(record.startedAt);
  assert.match(formatFooter(record, tally, started + 3_000), /^waiting for 3\.0 s so far /);
  assert.match(formatFooter(record, tally, started + 125_000), /^waiting for 2m 05s so far /);
  // A settled run took what its record says, whenever it is shown.
  const settled = loadFixture("approval_denied");
  const settledTally = new RunTally();
  for (const event of settled.events) settledTally.add(event);
  const shown = formatFooter(settled.record, settledTally, Date.now());
  assert.equal(formatFooter(settled.record, settledTally, 0), shown);
});

Deno.test("EventFormatter.formatAll() gives what format() gives event by event, controls or none", () => {
  let forged = 0;
  for (const name of FIXTURE_NAMES) {
    const { record, events } = loadFixture(name);
    // Clean events, then the same with a tool name and an id that hold controls (a harness's).
    const dirty = events.map((event) => {
      if (event.type !== "tool.started") return event;
      forged++;
      return { ...event, payload: { ...event.payload, tool: "ls\u001b[2J", callId: "id\nforged" } };
    });
    for (const mode of MODES) {
      for (const list of [events, dirty]) {
        const one = new EventFormatter(mode, record.startedAt);
        const all = new EventFormatter(mode, record.startedAt);
        const expected = list.map((event) => one.format(event)).join("\n");
        assert.equal(all.formatAll(list), expected, `${name} ${mode}`);
        // deno-lint-ignore no-control-regex -- control characters are what it looks for
        assert.ok(!/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(expected), `${name} ${mode} has a control`);
      }
    }
  }
  assert.ok(forged > 0, "no fixture starts a tool");
});

Deno.test("joinOneLine() of addLines() piece by piece, with a closing empty line, is format()'s lines and a newline", () => {
  let forged = 0;
  for (const name of FIXTURE_NAMES) {
    const { record, events } = loadFixture(name);
    // A harness's name that holds a control, in the second piece only.
    const dirty = events.map((event, i) =>
      i > events.length / 2 && event.type === "tool.started"
        ? (forged++, { ...event, payload: { ...event.payload, tool: "rm\u0007\r\n" } })
        : event
    );
    for (const mode of MODES) {
      for (const list of [events, dirty]) {
        const one = new EventFormatter(mode, record.startedAt);
        const expected = `${list.map((event) => one.format(event)).join("\n")}\n`;
        const pieces = new EventFormatter(mode, record.startedAt);
        const lines: string[] = [];
        const half = Math.floor(list.length / 2);
        pieces.addLines(list.slice(0, half), lines);
        const raw = lines.length;
        pieces.addLines(list.slice(half), lines);
        assert.ok(lines.length > raw, `${name}: the second piece added lines`);
        lines.push("");
        const copy = [...lines];
        assert.equal(joinOneLine(lines), expected, `${name} ${mode}`);
        assert.deepEqual(lines, copy, "the lines are left as they were");
      }
    }
  }
  assert.ok(forged > 0, "no fixture starts a tool in its second half");
});
