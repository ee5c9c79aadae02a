// A comparison as text: lines for a terminal, and Markdown for a pull-request comment or
// $GITHUB_STEP_SUMMARY (a heading that says whether the gate passed, a table, the evidence).
import type { Comparison, ScenarioComparison, SideCounts } from "./compare.ts";

function counts(side: SideCounts): string {
  return `${side.passed}/${side.n}`;
}

function signed(value: number | null, format: (v: number) => string): string {
  if (value === null) return "-";
  return `${value < 0 ? "-" : "+"}${format(Math.abs(value))}`;
}

const usd = (v: number) => `$${v.toFixed(4)}`;
const seconds = (v: number) => `${(v / 1000).toFixed(1)}s`;
const whole = (v: number) => String(Math.round(v));

function verdictText(one: ScenarioComparison): string {
  if (one.verdict !== "regressed" && one.verdict !== "improved") return one.verdict;
  return one.significant ? `${one.verdict}*` : one.verdict;
}

function pText(one: ScenarioComparison): string {
  return one.verdict === "unchanged" || (one.verdict === "flaky" && one.pValue === 1)
    ? "-"
    : one.pValue.toFixed(3);
}

function nameOf(one: ScenarioComparison): string {
  return one.agent === null ? one.scenario : `${one.agent}/${one.scenario}`;
}

function quoteCut(text: string | null, width = 140): string | null {
  if (text === null) return null;
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}

/** The evidence of one scenario's change: a line per flipped check and per new error reason. */
export function evidenceLines(one: ScenarioComparison): string[] {
  const lines: string[] = [];
  for (const check of one.flipped) {
    const b = quoteCut(check.reasonB ?? check.detailB);
    const a = quoteCut(check.reasonA ?? check.detailA);
    lines.push(
      `check ${JSON.stringify(check.name)} (${check.kind}) met ${check.a} → ${check.b}${
        b ? `: B: ${b}` : ""
      }${a ? ` (A: ${a})` : ""}`,
    );
  }
  for (const reason of one.errorsB) lines.push(`B erred: ${quoteCut(reason)}`);
  return lines;
}

export function summaryText(comparison: Comparison): string {
  const c = comparison.counts;
  const significant = comparison.significantRegressions;
  return `${c.regressed} regressed (${significant} significant), ${c.improved} improved, ${c.unchanged} unchanged, ${c.flaky} flaky`;
}

/** Lines for a terminal: the summary, a row per scenario, the evidence under the changed ones. */
export function compareLines(comparison: Comparison): string[] {
  const header = ["scenario", "verdict", "A", "B", "p", "Δ cost", "Δ tokens", "Δ duration"];
  const rows = comparison.scenarios.map((one) => [
    nameOf(one),
    verdictText(one),
    counts(one.a),
    counts(one.b),
    pText(one),
    signed(one.delta.costUsd, usd),
    signed(one.delta.tokens, whole),
    signed(one.delta.durationMs, seconds),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd();
  const lines = [line(header)];
  for (const [i, one] of comparison.scenarios.entries()) {
    lines.push(line(rows[i]));
    if (one.verdict !== "unchanged") {
      for (const said of evidenceLines(one)) lines.push(`  ${said}`);
    }
  }
  const o = comparison.overall;
  lines.push(
    `A ${comparison.a}: ${counts(o.a)} passed · B ${comparison.b}: ${counts(o.b)} passed · ${
      summaryText(comparison)
    } (* p ≤ ${comparison.alpha}, Fisher's exact test, one-sided)`,
  );
  if (comparison.onlyInA.length) {
    lines.push(`only in A (not compared): ${comparison.onlyInA.join(", ")}`);
  }
  if (comparison.onlyInB.length) {
    lines.push(`only in B (not compared): ${comparison.onlyInB.join(", ")}`);
  }
  const unplayed = unplayedLine(comparison);
  if (unplayed) lines.push(unplayed);
  return lines;
}

/** The line naming the scenarios a side never finished a play of, or null when there is none. */
export function unplayedLine(comparison: Comparison): string | null {
  if (comparison.unplayed.length === 0) return null;
  const named = comparison.unplayed.map((one) =>
    `${one.scenario} (${one.side === "both" ? "A and B" : one.side})`
  );
  return `no play finished (not compared): ${named.join(", ")}`;
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** Markdown for a pull-request comment or $GITHUB_STEP_SUMMARY. */
export function compareMarkdown(comparison: Comparison, gate: { failed: boolean }): string {
  const out: string[] = [];
  const mark = gate.failed ? "❌" : "✅";
  out.push(`### ${mark} reins suite compare: ${summaryText(comparison)}`);
  out.push("");
  out.push(
    `A (baseline) \`${comparison.a}\`: ${
      counts(comparison.overall.a)
    } passed · B \`${comparison.b}\`: ${counts(comparison.overall.b)} passed`,
  );
  out.push("");
  out.push("| scenario | verdict | A | B | p | Δ cost | Δ tokens | Δ duration |");
  out.push("| --- | --- | --- | --- | --- | --- | --- | --- |");
  // Changes first: a reviewer reads the top of the table.
  const order = { regressed: 0, flaky: 1, improved: 2, unchanged: 3 } as const;
  const sorted = [...comparison.scenarios].sort((x, y) => order[x.verdict] - order[y.verdict]);
  for (const one of sorted) {
    out.push(
      `| ${
        [
          cell(nameOf(one)),
          one.significant ? `**${one.verdict}**` : one.verdict,
          counts(one.a),
          counts(one.b),
          pText(one),
          signed(one.delta.costUsd, usd),
          signed(one.delta.tokens, whole),
          signed(one.delta.durationMs, seconds),
        ].join(" | ")
      } |`,
    );
  }
  const changed = sorted.filter((one) => one.verdict !== "unchanged" && evidenceLines(one).length);
  if (changed.length) {
    out.push("");
    out.push("<details><summary>Evidence</summary>");
    out.push("");
    for (const one of changed) {
      out.push(`**${cell(nameOf(one))}** (${one.verdict})`);
      for (const said of evidenceLines(one)) out.push(`- ${cell(said)}`);
      out.push("");
    }
    out.push("</details>");
  }
  const unplayed = unplayedLine(comparison);
  if (comparison.onlyInA.length || comparison.onlyInB.length || unplayed) {
    out.push("");
    if (comparison.onlyInA.length) {
      out.push(`Only in A (not compared): ${comparison.onlyInA.join(", ")}`);
    }
    if (comparison.onlyInB.length) {
      out.push(`Only in B (not compared): ${comparison.onlyInB.join(", ")}`);
    }
    if (unplayed) out.push(unplayed.replace(/^no/, "No"));
  }
  out.push("");
  out.push(
    `Bold: significant at p ≤ ${comparison.alpha} (Fisher's exact test, one-sided, over the epochs).`,
  );
  return `${out.join("\n")}\n`;
}
