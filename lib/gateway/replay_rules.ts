// What a replay of a harness run compares in each model call's request, per wire, and what it
// ignores (docs/gateway.md, "Replay"). What matters: the conversation (messages, with the tool
// calls and tool results in them) and the tools offered (their names). Ignored: everything else
// of the request — the system prompt and instructions (they carry the date, the directory, the
// platform, the harness's version), sampling settings, metadata, cache markers (cache_control,
// prompt_cache_key), ids (of messages, tool calls, items, sessions) — and, inside what is
// compared, the working directory's path (the replay runs elsewhere), dates and times, UUIDs.
import type { Wire } from "./wires.ts";

/** What of a request is compared: `conversation` and `tools`, normalized; null when not JSON. */
export interface Comparable {
  conversation: unknown;
  tools: string[];
}

/**
 * Paths that differ between a recording and its replay: the working directory (the recorded
 * run's and the replay's) and the harness's home (the user's, and the replay's scratch home).
 */
export interface ReplayPaths {
  cwds: readonly string[];
  homes?: readonly string[];
}

/** Keys dropped wherever they are: ids, cache markers, signatures. */
const VOLATILE_KEYS = new Set([
  "id",
  "call_id",
  "tool_use_id",
  "tool_call_id",
  "cache_control",
  "signature",
  "encrypted_content",
  "thoughtSignature",
]);

const ISO_TIME =
  /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g;
const MONTHS = "January|February|March|April|May|June|July|August|September|October|" +
  "November|December";
const DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday";
const SPELLED_DATE = new RegExp(
  `\\b(?:(?:${DAYS}),?\\s+)?(?:${MONTHS})\\s+\\d{1,2}(?:st|nd|rd|th)?,?\\s+\\d{4}\\b`,
  "g",
);
const CLOCK = /\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AP]M)?\b/g;
/** Digests and other long hex (a project's hash in a path, a chunk's id). */
const HEX = /\b[0-9a-f]{32,}\b/g;
/** What harnesses say of a command's run that changes every time (Codex's exec output). */
const HARNESS_VOLATILE: [RegExp, string][] = [
  [/\bChunk ID: [0-9a-z]+/g, "Chunk ID: <id>"],
  [/\bWall time: [\d.]+ seconds/g, "Wall time: <duration>"],
  // Gemini CLI's shell tool.
  [/\bProcess Group PGID: \d+/g, "Process Group PGID: <pid>"],
  [/\bBackground PIDs: [\d, ]+/g, "Background PIDs: <pid>"],
  [/\b(?:took|in|after) \d+(?:\.\d+)? ?(?:ms|s|seconds|milliseconds)\b/g, "<duration>"],
];
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** A text with the volatile parts replaced by placeholders. */
export function normalizeText(text: string, paths: ReplayPaths): string {
  let out = text;
  // The longest first, so that a directory inside another is not half replaced.
  const named = [
    ...paths.cwds.map((path) => [path, "<cwd>"]),
    ...(paths.homes ?? []).map((path) => [path, "<home>"]),
  ].filter(([path]) => path.length > 1).sort((a, b) => b[0].length - a[0].length);
  for (const [path, name] of named) {
    if (out.includes(path)) out = out.replaceAll(path, name);
  }
  out = out.replace(ISO_TIME, "<date>").replace(SPELLED_DATE, "<date>").replace(CLOCK, "<time>")
    .replace(UUID, "<uuid>").replace(HEX, "<hex>");
  for (const [pattern, name] of HARNESS_VOLATILE) out = out.replace(pattern, name);
  return out;
}

/**
 * The texts normalized so far for one replay's paths. A harness sends its whole conversation
 * again with each call, so a replay of N calls would normalize its early messages N times over
 * (the regular expressions above over every text, the most of a replay's own time in the gateway
 * past a few dozen calls); each text is normalized once instead. Bounded: past
 * NORMALIZED_KEPT_CHARS kept, texts are normalized as they come.
 */
const normalizedTexts = new WeakMap<ReplayPaths, { texts: Map<string, string>; chars: number }>();
const NORMALIZED_KEPT_CHARS = 16 * 1024 * 1024;

function normalizedText(text: string, paths: ReplayPaths): string {
  if (text.length < 8) return normalizeText(text, paths);
  let kept = normalizedTexts.get(paths);
  if (kept === undefined) normalizedTexts.set(paths, kept = { texts: new Map(), chars: 0 });
  const known = kept.texts.get(text);
  if (known !== undefined) return known;
  const normalized = normalizeText(text, paths);
  if (kept.chars + text.length + normalized.length <= NORMALIZED_KEPT_CHARS) {
    kept.texts.set(text, normalized);
    kept.chars += text.length + normalized.length;
  }
  return normalized;
}

function normalize(value: unknown, paths: ReplayPaths): unknown {
  if (typeof value === "string") return normalizedText(value, paths);
  if (Array.isArray(value)) return value.map((item) => normalize(item, paths));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      if (VOLATILE_KEYS.has(key)) continue;
      out[key] = normalize((value as Record<string, unknown>)[key], paths);
    }
    return out;
  }
  return value;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
}

function array(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function names(items: unknown[], pick: (item: Record<string, unknown>) => unknown[]): string[] {
  const found = new Set<string>();
  for (const item of items) {
    for (const name of pick(record(item))) if (typeof name === "string") found.add(name);
  }
  return [...found].sort();
}

/** Anthropic's and OpenAI's tools: `{name}` or `{type: "function", function: {name}}`. */
function toolNames(tools: unknown): string[] {
  return names(array(tools), (tool) => {
    const fn = record(tool.function);
    return [tool.name ?? fn.name ?? tool.type];
  });
}

/** A system-role message of a chat: its prompt, ignored as the `system` field is. */
function isSystem(message: unknown): boolean {
  const role = record(message).role;
  return role === "system" || role === "developer";
}

/** What of a request `body` (parsed JSON) a replay compares on `wire`; null: nothing (opaque). */
export function comparable(wire: Wire, body: unknown, paths: ReplayPaths): Comparable | null {
  const request = record(body);
  switch (wire) {
    case "anthropic.messages":
    case "anthropic.count_tokens":
      return {
        conversation: normalize(array(request.messages), paths),
        tools: toolNames(request.tools),
      };
    case "openai.responses":
      return {
        // Codex's instructions and developer messages are its system prompt.
        conversation: normalize(
          typeof request.input === "string"
            ? request.input
            : array(request.input).filter((item) => !isSystem(item)),
          paths,
        ),
        tools: toolNames(request.tools),
      };
    case "openai.chat":
      return {
        conversation: normalize(array(request.messages).filter((m) => !isSystem(m)), paths),
        tools: toolNames(request.tools),
      };
    case "gemini.generate":
    case "gemini.stream":
      return {
        conversation: normalize(array(request.contents), paths),
        tools: names(
          array(request.tools),
          (tool) => array(tool.functionDeclarations).map((fn) => record(fn).name),
        ),
      };
    case "opaque":
      return null;
  }
}

/** What differs between two requests' comparable parts: `messages`, `tools` (empty: none). */
export function differences(recorded: Comparable | null, replayed: Comparable | null): string[] {
  if (recorded === null || replayed === null) return [];
  const found: string[] = [];
  if (JSON.stringify(recorded.conversation) !== JSON.stringify(replayed.conversation)) {
    found.push("messages");
  }
  if (JSON.stringify(recorded.tools) !== JSON.stringify(replayed.tools)) found.push("tools");
  return found;
}

/** Where two compared values first differ: the path to it (`messages[2].content[0].text`), and each side. */
export interface Difference {
  at: string;
  recorded: string;
  replayed: string;
}

const SHOWN = 240;

function shown(value: unknown): string {
  const text = value === undefined
    ? "(nothing)"
    : typeof value === "string"
    ? value
    : JSON.stringify(value);
  return text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text;
}

/** The first place `recorded` and `replayed` differ, depth first (null: they do not). */
export function firstDifference(recorded: unknown, replayed: unknown, at = ""): Difference | null {
  if (JSON.stringify(recorded) === JSON.stringify(replayed)) return null;
  if (Array.isArray(recorded) && Array.isArray(replayed)) {
    for (let i = 0; i < Math.max(recorded.length, replayed.length); i++) {
      const found = firstDifference(recorded[i], replayed[i], `${at}[${i}]`);
      if (found !== null) return found;
    }
  }
  const a = record(recorded);
  const b = record(replayed);
  if (recorded === a && replayed === b) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const found = firstDifference(a[key], b[key], at === "" ? key : `${at}.${key}`);
      if (found !== null) return found;
    }
  }
  if (typeof recorded === "string" && typeof replayed === "string") {
    // Shown from a little before the first character that differs.
    let first = 0;
    while (first < recorded.length && recorded[first] === replayed[first]) first++;
    const from = Math.max(0, first - 60);
    const cut = (text: string) => `${from > 0 ? "…" : ""}${shown(text.slice(from))}`;
    return { at, recorded: cut(recorded), replayed: cut(replayed) };
  }
  return { at, recorded: shown(recorded), replayed: shown(replayed) };
}

/** Where two requests' comparable parts first differ (null: they do not, or either is opaque). */
export function whereDiffering(
  recorded: Comparable | null,
  replayed: Comparable | null,
): Difference | null {
  if (recorded === null || replayed === null) return null;
  return firstDifference(
    { messages: recorded.conversation, tools: recorded.tools },
    { messages: replayed.conversation, tools: replayed.tools },
  );
}
