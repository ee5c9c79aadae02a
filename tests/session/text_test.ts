import assert from "node:assert/strict";
import {
  countChars,
  formatBytes,
  formatCost,
  formatDuration,
  formatOffset,
  groupDigits,
  isoMs,
  oneLine,
  preview,
  previewValue,
  quoted,
} from "../../lib/session/text.ts";

Deno.test("oneLine() shows newlines as ⏎ and other control characters as their pictures", () => {
  assert.equal(oneLine("a\nb\r\nc"), "a⏎b⏎c");
  assert.equal(oneLine("tab\there"), "tab here");
  assert.equal(oneLine("\u001b[31mred\u001b[0m"), "␛[31mred␛[0m");
  assert.equal(oneLine("bell\u0007 del\u007f nul\u0000 cr\r"), "bell␇ del␡ nul␀ cr␍");
  assert.equal(oneLine("c1 \u009b2J"), "c1 \\x9b2J");
  assert.equal(oneLine("plain"), "plain");
});

Deno.test("preview() keeps a text that fits and says how long a cut one was", () => {
  assert.equal(preview("short", 10), "short");
  assert.equal(preview("0123456789", 10), "0123456789");
  assert.equal(preview("0123456789abc", 10), "0123456789… (13 chars)");
  assert.equal(preview("line one\nline two\nline three", 12), "line one⏎lin… (28 chars)");
  assert.equal(preview("x".repeat(12_345), 3), "xxx… (12,345 chars)");
});

Deno.test("preview() counts and cuts by code point, never splitting an emoji", () => {
  const text = "😀".repeat(5); // 10 UTF-16 units, 5 characters
  assert.equal(countChars(text), 5);
  assert.equal(preview(text, 5), text);
  assert.equal(preview(text, 2), "😀😀… (5 chars)");
});

Deno.test("quoted() puts the count outside the quotes", () => {
  assert.equal(quoted("hello", 10), `"hello"`);
  assert.equal(quoted("hello world", 5), `"hello…" (11 chars)`);
});

Deno.test("previewValue() quotes strings and writes anything else as JSON", () => {
  assert.equal(previewValue("a\nb", 10), `"a⏎b"`);
  assert.equal(previewValue({ path: "a.txt" }, 40), `{"path":"a.txt"}`);
  assert.equal(previewValue({ content: "x\ny" }, 40), `{"content":"x\\ny"}`);
  assert.equal(previewValue(42, 10), "42");
  assert.equal(previewValue([1, 2, 3, 4, 5], 5), "[1,2,… (11 chars)");
});

Deno.test("groupDigits() groups thousands whatever the machine's locale", () => {
  assert.equal(groupDigits(0), "0");
  assert.equal(groupDigits(999), "999");
  assert.equal(groupDigits(1000), "1,000");
  assert.equal(groupDigits(1234567), "1,234,567");
  assert.equal(groupDigits(-12345), "-12,345");
  assert.equal(groupDigits(1234.5), "1,234.5");
});

Deno.test("groupDigits() groups every integer as the digits-in-threes rule does, zeros inside too", () => {
  const rule = (n: number) =>
    `${n < 0 ? "-" : ""}${String(Math.abs(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",")}`;
  const samples = [1_000, 1_001, 1_010, 1_100, 999_999, 1_000_000, 1_000_001, 10_000_100];
  samples.push(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 16_666_000, 33_332);
  for (let i = 0; i < 200_000; i++) samples.push(i * 7919, -i * 104_729, i * 1_000_003);
  for (const n of samples) assert.equal(groupDigits(n), rule(n), String(n));
});

Deno.test("oneLine() maps each control as its rule says and leaves every other character", () => {
  // The rule, a character at a time (CRLF as one ⏎), against random mixes of controls and text.
  const rule = (text: string) =>
    text.replaceAll("\r\n", "\u0000crlf").replace(/[\s\S]/gu, (c) => {
      const code = c.codePointAt(0)!;
      if (c === "\n") return "⏎";
      if (c === "\t") return " ";
      if (code === 0x7f) return "␡";
      if (code < 0x20) return String.fromCharCode(0x2400 + code);
      if (code >= 0x80 && code <= 0x9f) return `\\x${code.toString(16)}`;
      return c;
    }).replaceAll("␀crlf", "⏎");
  const pieces = [
    "a",
    "é",
    "😀",
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\u001b",
    "\u0000",
    "\u007f",
    "\u0085",
    "\u009f",
    "\u00a0",
    "⏎",
  ];
  for (let n = 0; n < 5_000; n++) {
    let text = "";
    for (let i = (n * 7) % 9; i > 0; i--) text += pieces[(n * 31 + i * 17) % pieces.length];
    assert.equal(oneLine(text), rule(text), JSON.stringify(text));
  }
});

Deno.test("formatCost() rounds as toFixed does, near halves too", () => {
  for (let i = 0; i < 200_000; i++) {
    for (const usd of [i / 10_000, (i + 0.5) / 10_000, i * 0.0012, i / 100 + 0.005, i * 1.005]) {
      const [whole, cents] = usd.toFixed(2).split(".");
      if (usd > 0 && usd < 0.0001) continue; // significant digits: see below
      const expected = usd < 1 ? `$${usd.toFixed(4)}` : `$${groupDigits(Number(whole))}.${cents}`;
      assert.equal(formatCost(usd), expected, String(usd));
    }
  }
});

Deno.test("formatCost() shows fractions of a cent below a dollar and cents above", () => {
  assert.equal(formatCost(0), "$0.0000");
  assert.equal(formatCost(0.0031), "$0.0031");
  assert.equal(formatCost(4), "$4.00");
  assert.equal(formatCost(1234.567), "$1,234.57");
});

// regression: a call of a cheap model (gpt-5-nano: 40 in / 12 out tokens is $0.0000068) showed as
// $0.0000, as if it were free.
Deno.test("formatCost() shows two significant digits below a hundredth of a cent", () => {
  assert.equal(formatCost(0.0000068), "$0.0000068");
  assert.equal(formatCost(0.0000123), "$0.000012");
  assert.equal(formatCost(0.00005), "$0.00005");
  assert.equal(formatCost(0.00001), "$0.00001");
  assert.equal(formatCost(1e-8), "$0.00000001");
  assert.equal(formatCost(0.0001), "$0.0001");
  for (let usd = 1e-9; usd < 0.0001; usd *= 1.37) {
    const shown = Number(formatCost(usd).slice(1));
    assert.ok(shown > 0 && Math.abs(shown - usd) / usd < 0.1, `${usd}: ${formatCost(usd)}`);
  }
});

Deno.test("formatDuration() and formatOffset() pick a unit people read at a glance", () => {
  assert.equal(formatDuration(0), "0 ms");
  assert.equal(formatDuration(999), "999 ms");
  assert.equal(formatDuration(1250), "1.3 s");
  assert.equal(formatDuration(185_000), "3m 05s");
  assert.equal(formatDuration(7_620_000), "2h 07m");
  assert.equal(formatOffset(12), "+0.012s");
  assert.equal(formatOffset(12_345), "+12.345s");
  assert.equal(formatOffset(123_400), "+2m03.4s");
  assert.equal(formatOffset(3_723_000), "+1h02m03s");
  assert.equal(formatOffset(-5), "-0.005s");
});

Deno.test("formatBytes() writes sizes in decimal units", () => {
  assert.equal(formatBytes(9), "9 B");
  assert.equal(formatBytes(1_234), "1.2 kB");
  assert.equal(formatBytes(5_600_000), "5.6 MB");
});

Deno.test("isoMs() reads the store's timestamps as Date.parse does, and anything else by it", () => {
  for (
    const text of [
      "2026-11-29T14:55:36.810Z",
      "2026-11-29T14:55:59.999Z",
      "2026-11-29T14:56:00.000Z",
      "2026-12-31T23:59:59.001Z",
      "2026-11-29T16:55:36.810+02:00",
      "2026-11-29T14:55:36Z",
    ]
  ) {
    assert.equal(isoMs(text), Date.parse(text), text);
  }
  assert.ok(Number.isNaN(isoMs("not a time at all, really")));
  assert.ok(Number.isNaN(isoMs("2026-11-29T14:55:3x.810Z")));
});

Deno.test("isoMs() reads a time of another minute anew after one it remembered the minute of", () => {
  // The same seconds and milliseconds in other minutes, hours, days, and back: each as Date.parse.
  const texts = [
    "2026-11-29T14:55:36.810Z",
    "2026-11-29T14:56:36.810Z",
    "2026-11-29T15:55:36.810Z",
    "2026-11-30T14:55:36.810Z",
    "2027-11-29T14:55:36.810Z",
    "2026-11-29T14:55:36.811Z",
    "2026-11-29T14:55:61.000Z",
    "2026-11-29T14:55:36.810Z",
  ];
  for (const text of [...texts, ...texts.toReversed()]) {
    assert.deepEqual([text, isoMs(text)], [text, Date.parse(text)]);
  }
});
