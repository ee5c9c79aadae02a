// The model APIs the gateway understands, by the path a harness calls: Anthropic Messages (and its
// count_tokens), OpenAI Responses and Chat Completions, Gemini generateContent and
// streamGenerateContent (Google AI and Code Assist). For each: what a request asks for (model,
// stream), and what a response says, read as it streams — the model, the stop reason, the usage
// in reins's names and the text, for `message.delta`. Anything else is `opaque`: forwarded and
// recorded, never read. It parses; it neither forwards nor records.
import type { CallUsage } from "../store/mod.ts";
import { textRun, type TextShape } from "./text_runs.ts";

export const WIRES = [
  "anthropic.messages",
  "anthropic.count_tokens",
  "openai.responses",
  "openai.chat",
  "gemini.generate",
  "gemini.stream",
  "opaque",
] as const;
export type Wire = typeof WIRES[number];

/** Whether a call of `wire` asks a model to generate (what a budget counts as a model call). */
export function generates(wire: Wire): boolean {
  return wire !== "anthropic.count_tokens" && wire !== "opaque";
}

/** The wire a request is on, from its method and its path below the route (query left out). */
export function wireOf(method: string, path: string): Wire {
  if (method !== "POST") return "opaque";
  const bare = path.replace(/\/+$/, "");
  if (/\/messages\/count_tokens$/.test(bare)) return "anthropic.count_tokens";
  if (/(^|\/)messages$/.test(bare)) return "anthropic.messages";
  if (/(^|\/)responses$/.test(bare)) return "openai.responses";
  if (/(^|\/)chat\/completions$/.test(bare)) return "openai.chat";
  if (/:streamGenerateContent$/.test(bare)) return "gemini.stream";
  if (/:generateContent$/.test(bare)) return "gemini.generate";
  return "opaque";
}

/** What a request says of itself: the model asked for and whether it asked for a stream. */
export interface RequestFacts {
  model: string | null;
  stream: boolean | null;
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : null;
}

function string(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0
    ? Math.round(value)
    : undefined;
}

/** The model and stream flag of a request body (parsed JSON, or null when it is not JSON). */
export function requestFacts(wire: Wire, path: string, body: unknown): RequestFacts {
  const fields = record(body);
  if (wire === "gemini.stream" || wire === "gemini.generate") {
    // Google AI names the model in the path; Code Assist in the body.
    const named = /models\/([^/:]+):/.exec(path)?.[1] ?? string(fields?.model);
    return { model: named ? decodeURIComponent(named) : null, stream: wire === "gemini.stream" };
  }
  if (wire === "opaque") return { model: string(fields?.model), stream: null };
  const stream = typeof fields?.stream === "boolean" ? fields.stream : false;
  return { model: string(fields?.model), stream };
}

/** What a response said, gathered as it streamed. */
export interface ResponseFacts {
  /** The answer's own id (Anthropic's message id, a response's, a completion's). */
  id: string | null;
  model: string | null;
  stopReason: string | null;
  usage: CallUsage | null;
  /** An error the body carried (a stream's error event, an error answer). */
  error: string | null;
}

/** The events of each wire that only stream text, read in runs (text_runs.ts). */
const TEXT_SHAPES: Partial<Record<Wire, TextShape>> = {
  "anthropic.messages": {
    head: "event: content_block_delta\ndata: ",
    key: '"type":"text_delta","text":"',
  },
  "openai.responses": { head: "event: response.output_text.delta\ndata: ", key: '"delta":"' },
  "openai.chat": {
    head: "data: ",
    key: '"content":"',
    excludes: ['"usage"', '"finish_reason":"'],
  },
};

/**
 * Reads one response as it comes: SSE events (`event`, `data` parsed as JSON) or a whole JSON
 * body. `text` receives the text the model streams, piece by piece.
 */
export class ResponseReader {
  readonly wire: Wire;
  readonly facts: ResponseFacts = {
    id: null,
    model: null,
    stopReason: null,
    usage: null,
    error: null,
  };
  readonly #text: (piece: string) => void;

  readonly #shape: TextShape | undefined;

  constructor(wire: Wire, text: (piece: string) => void) {
    this.wire = wire;
    this.#text = text;
    this.#shape = TEXT_SHAPES[wire];
  }

  /**
   * The whole events at `from` in an SSE stream's `text` (up to `limit`) that only stream text,
   * read at once; returns where they end (`from` when the event there is not one of them).
   */
  textRun(text: string, from: number, limit: number): number {
    if (this.#shape === undefined) return from;
    const run = textRun(text, from, limit, this.#shape);
    if (run === null) return from;
    if (run.text !== "") this.#text(run.text);
    return run.end;
  }

  /**
   * One SSE event: its `event:` name (or null) and its `data:` as text. The events that only
   * carry streamed text (nearly all of a long answer) are read for their text alone; the rest
   * are parsed whole.
   */
  eventText(name: string | null, raw: string): void {
    if (this.wire === "anthropic.count_tokens" || this.wire === "opaque") return;
    const type = name ?? typeAt(raw);
    if (this.wire === "anthropic.messages" && type === "content_block_delta") {
      if (raw.includes('"type":"text_delta"')) {
        const text = stringAfter(raw, '"text":');
        if (text !== null) return this.#text(text);
      } else if (!raw.includes('"text_delta"')) return; // a tool's arguments, thinking
    } else if (this.wire === "openai.responses") {
      if (type === "response.output_text.delta") {
        const text = stringAfter(raw, '"delta":');
        if (text !== null) return this.#text(text);
      } else if (type !== null && DELTA_ONLY.test(type)) return;
    } else if (
      this.wire === "openai.chat" && !raw.includes('"usage"') && !raw.includes('"finish_reason":"')
    ) {
      const text = stringAfter(raw, '"content":');
      if (text !== null) return this.#text(text);
    }
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch {
      return; // not JSON ([DONE], a keep-alive): nothing to read in it
    }
    this.event(name, data);
  }

  /** One SSE event: its `event:` name (or null) and its `data:` parsed. */
  event(name: string | null, data: unknown): void {
    const value = record(data);
    if (value === null) return;
    switch (this.wire) {
      case "anthropic.messages":
        return this.#anthropic(name ?? string(value.type), value);
      case "openai.responses":
        return this.#responses(string(value.type) ?? name, value);
      case "openai.chat":
        return this.#chat(value, true);
      case "gemini.stream":
      case "gemini.generate":
        return this.#gemini(value, true);
      case "anthropic.count_tokens":
      case "opaque":
        return;
    }
  }

  /** A whole JSON answer (not a stream). */
  json(data: unknown): void {
    const value = record(data);
    if (value === null) return;
    switch (this.wire) {
      case "anthropic.messages": {
        if (value.type === "error") return this.#errorOf(value);
        this.facts.id = string(value.id);
        this.facts.model = string(value.model);
        this.facts.stopReason = string(value.stop_reason);
        this.facts.usage = anthropicUsage(record(value.usage));
        for (const block of Array.isArray(value.content) ? value.content : []) {
          const text = string(record(block)?.text);
          if (text && record(block)?.type === "text") this.#text(text);
        }
        return;
      }
      case "openai.responses": {
        if (record(value.error)) return this.#errorOf(value);
        this.#responseObject(value);
        return;
      }
      case "openai.chat":
        if (record(value.error)) return this.#errorOf(value);
        return this.#chat(value, false);
      case "gemini.stream":
      case "gemini.generate":
        if (record(value.error)) return this.#errorOf(value);
        return this.#gemini(value, false);
      case "anthropic.count_tokens": {
        const input = count(value.input_tokens);
        if (input !== undefined) this.facts.usage = { inputTokens: input };
        return;
      }
      case "opaque":
        return;
    }
  }

  #errorOf(value: Record<string, unknown>): void {
    const error = record(value.error);
    this.facts.error = string(error?.message) ?? string(value.message) ?? "an error";
  }

  #anthropic(type: string | null, value: Record<string, unknown>): void {
    switch (type) {
      case "message_start": {
        const message = record(value.message);
        this.facts.id = string(message?.id) ?? this.facts.id;
        this.facts.model = string(message?.model) ?? this.facts.model;
        this.facts.usage = anthropicUsage(record(message?.usage));
        return;
      }
      case "content_block_delta": {
        const delta = record(value.delta);
        if (delta?.type === "text_delta" && typeof delta.text === "string") this.#text(delta.text);
        return;
      }
      case "message_delta": {
        this.facts.stopReason = string(record(value.delta)?.stop_reason) ?? this.facts.stopReason;
        // message_delta's usage is cumulative: what it gives replaces what message_start said.
        const usage = anthropicUsage(record(value.usage));
        if (usage !== null) this.facts.usage = { ...this.facts.usage, ...usage };
        return;
      }
      case "error":
        return this.#errorOf(value);
      default:
        return;
    }
  }

  #responses(type: string | null, value: Record<string, unknown>): void {
    switch (type) {
      case "response.output_text.delta":
        if (typeof value.delta === "string") this.#text(value.delta);
        return;
      case "response.created":
      case "response.in_progress":
      case "response.completed":
      case "response.incomplete":
      case "response.failed": {
        const response = record(value.response);
        if (response !== null) this.#responseObject(response, type);
        return;
      }
      case "error":
        this.facts.error = string(value.message) ?? string(record(value.error)?.message) ??
          "an error";
        return;
      default:
        return;
    }
  }

  #responseObject(response: Record<string, unknown>, type?: string): void {
    this.facts.id = string(response.id) ?? this.facts.id;
    this.facts.model = string(response.model) ?? this.facts.model;
    const usage = responsesUsage(record(response.usage));
    if (usage !== null) this.facts.usage = usage;
    const status = string(response.status);
    if (type === "response.completed" || type === undefined) {
      this.facts.stopReason = responsesStop(response) ?? status ?? this.facts.stopReason;
    } else if (type === "response.incomplete" || type === "response.failed") {
      this.facts.stopReason = string(record(response.incomplete_details)?.reason) ?? status;
      const error = record(response.error);
      if (error) this.facts.error = string(error.message) ?? "the response failed";
    }
  }

  #chat(value: Record<string, unknown>, streamed: boolean): void {
    this.facts.id = string(value.id) ?? this.facts.id;
    this.facts.model = string(value.model) ?? this.facts.model;
    const usage = chatUsage(record(value.usage));
    if (usage !== null) this.facts.usage = usage;
    for (const choice of Array.isArray(value.choices) ? value.choices : []) {
      const fields = record(choice);
      const finish = string(fields?.finish_reason);
      if (finish) this.facts.stopReason = finish;
      const part = record(streamed ? fields?.delta : fields?.message);
      if (typeof part?.content === "string" && part.content !== "") this.#text(part.content);
    }
  }

  #gemini(value: Record<string, unknown>, _streamed: boolean): void {
    // Code Assist wraps the Google AI answer in `response`.
    const answer = record(value.response) ?? value;
    this.facts.id = string(answer.responseId) ?? this.facts.id;
    this.facts.model = string(answer.modelVersion) ?? this.facts.model;
    const usage = geminiUsage(record(answer.usageMetadata));
    if (usage !== null) this.facts.usage = usage;
    for (const candidate of Array.isArray(answer.candidates) ? answer.candidates : []) {
      const fields = record(candidate);
      const finish = string(fields?.finishReason);
      if (finish) this.facts.stopReason = finish;
      const parts = record(fields?.content)?.parts;
      for (const part of Array.isArray(parts) ? parts : []) {
        const piece = record(part);
        // Thoughts are not the answer's text.
        if (typeof piece?.text === "string" && piece.text !== "" && piece.thought !== true) {
          this.#text(piece.text);
        }
      }
    }
  }
}

/** Responses API events that carry only a piece of something (never usage, model or text). */
const DELTA_ONLY =
  /^response\.(function_call_arguments|reasoning_summary_text|reasoning_text|output_text\.annotation|audio|refusal)\./;

/** The value of `"type"` when it opens the event's JSON object, else null. */
function typeAt(raw: string): string | null {
  if (!raw.startsWith('{"type":"')) return null;
  const end = raw.indexOf('"', 9);
  return end < 0 ? null : raw.slice(9, end);
}

/**
 * The JSON string that follows `key` (`"text":`) in `raw`, decoded; null when there is none
 * (then the event is parsed whole). Its end is the first quote not escaped.
 */
function stringAfter(raw: string, key: string): string | null {
  const at = raw.indexOf(key);
  if (at < 0) return null;
  let start = at + key.length;
  while (raw.charCodeAt(start) === 32) start++;
  if (raw.charCodeAt(start) !== 34) return null;
  // Most text has no escapes: the string ends at the next quote.
  const close = raw.indexOf('"', start + 1);
  if (close < 0) return null;
  const literal = raw.slice(start + 1, close);
  if (!literal.includes("\\")) return literal;
  // Escapes: the string ends at the first quote that is not escaped.
  let end = start + 1;
  for (; end < raw.length; end++) {
    const code = raw.charCodeAt(end);
    if (code === 92) end++;
    else if (code === 34) break;
  }
  if (end >= raw.length) return null;
  try {
    return JSON.parse(raw.slice(start, end + 1));
  } catch {
    return null;
  }
}

/** Anthropic's usage: input_tokens leaves the cache out (as Claude Code counts it too). */
export function anthropicUsage(usage: Record<string, unknown> | null): CallUsage | null {
  if (usage === null) return null;
  const out: CallUsage = {};
  const input = count(usage.input_tokens);
  const output = count(usage.output_tokens);
  const read = count(usage.cache_read_input_tokens);
  const write = count(usage.cache_creation_input_tokens);
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (read !== undefined) out.cacheReadTokens = read;
  if (write !== undefined) out.cacheWriteTokens = write;
  return Object.keys(out).length ? out : null;
}

/** The Responses API's usage: input_tokens includes the cached ones. */
export function responsesUsage(usage: Record<string, unknown> | null): CallUsage | null {
  if (usage === null) return null;
  const out: CallUsage = {};
  const input = count(usage.input_tokens);
  const output = count(usage.output_tokens);
  const cached = count(record(usage.input_tokens_details)?.cached_tokens);
  const reasoning = count(record(usage.output_tokens_details)?.reasoning_tokens);
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (cached !== undefined) out.cacheReadTokens = cached;
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return Object.keys(out).length ? out : null;
}

/** Chat Completions' usage: prompt_tokens includes the cached ones. */
export function chatUsage(usage: Record<string, unknown> | null): CallUsage | null {
  if (usage === null) return null;
  const out: CallUsage = {};
  const input = count(usage.prompt_tokens);
  const output = count(usage.completion_tokens);
  const cached = count(record(usage.prompt_tokens_details)?.cached_tokens);
  const reasoning = count(record(usage.completion_tokens_details)?.reasoning_tokens);
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (cached !== undefined) out.cacheReadTokens = cached;
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return Object.keys(out).length ? out : null;
}

/**
 * Gemini's usageMetadata: promptTokenCount includes the cached ones; thoughts are output the
 * model is billed for, counted apart (thoughtsTokenCount) and added to the output here.
 */
export function geminiUsage(usage: Record<string, unknown> | null): CallUsage | null {
  if (usage === null) return null;
  const out: CallUsage = {};
  const input = count(usage.promptTokenCount);
  const candidates = count(usage.candidatesTokenCount);
  const thoughts = count(usage.thoughtsTokenCount);
  const cached = count(usage.cachedContentTokenCount);
  if (input !== undefined) out.inputTokens = input;
  if (candidates !== undefined || thoughts !== undefined) {
    out.outputTokens = (candidates ?? 0) + (thoughts ?? 0);
  }
  if (cached !== undefined) out.cacheReadTokens = cached;
  if (thoughts !== undefined) out.reasoningTokens = thoughts;
  return Object.keys(out).length ? out : null;
}

/** Why a Responses API answer stopped: a tool call, or its status. */
function responsesStop(response: Record<string, unknown>): string | null {
  const output = Array.isArray(response.output) ? response.output : [];
  if (output.some((item) => record(item)?.type === "function_call")) return "tool_calls";
  return string(response.status);
}

/** Whether `inputTokens` of a wire's usage leaves the cache out (Anthropic's). */
export function inputExcludesCache(wire: Wire): boolean {
  return wire === "anthropic.messages" || wire === "anthropic.count_tokens";
}
