// `openai:MODEL`: any OpenAI-compatible Chat Completions endpoint, streamed. Rate limits (429),
// server errors (5xx) and unreachable servers are retried a bounded number of times with jittered
// backoff, honouring Retry-After; anything else fails at once with an error that says what to
// do. A stream cut halfway is not retried: the model may have said things we cannot take back.
import { type Model, ModelError, type ModelOutput, type ModelRequest } from "./model.ts";
import {
  ChatChunk,
  ChatCompletion,
  chatRequestBody,
  ChatStream,
  completionOutput,
} from "./openai_wire.ts";
import { readServerSentEvents } from "./sse.ts";

export interface RetryOptions {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The first backoff; each next one doubles, up to maxDelayMs, jittered down to half. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the call fails at once. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

export interface OpenAIModelOptions {
  /** The model name the endpoint knows (`gpt-4o-mini`). */
  model: string;
  /** Up to and including the version (`https://api.openai.com/v1`). */
  baseUrl: string;
  apiKey: string | null;
  retry?: Partial<RetryOptions>;
}

export function openaiModel(options: OpenAIModelOptions): Model {
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
  };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  return {
    name: `openai:${options.model}`,
    async complete(request: ModelRequest): Promise<ModelOutput> {
      const body = JSON.stringify(chatRequestBody(options.model, request.history, request.tools));
      for (let attempt = 1;; attempt++) {
        let response: Response;
        try {
          response = await fetch(url, { method: "POST", headers, body, signal: request.signal });
        } catch (error) {
          if (request.signal.aborted) throw error;
          const failure = new ModelError(
            `Cannot reach the model endpoint ${url}: ${(error as Error).message}` +
              attemptsNote(attempt),
            {
              hint: "check --base-url (or OPENAI_BASE_URL) and that the server is up",
              cause: error,
            },
          );
          if (attempt >= retry.maxAttempts) throw failure;
          await sleep(backoffMs(attempt, retry), request.signal);
          continue;
        }
        if (response.ok) return await readAnswer(response, url, request.signal);
        const detail = await errorDetail(response);
        const failure = statusError(response, url, options.model, detail, attempt);
        if (!isTransient(response.status)) throw failure;
        const waitMs = retryAfterMs(response.headers) ?? backoffMs(attempt, retry);
        if (waitMs > retry.maxRetryAfterMs) {
          throw new ModelError(
            `${failure.message}; it asked to retry after ${Math.ceil(waitMs / 1000)} s`,
            { status: response.status, hint: failure.hint },
          );
        }
        if (attempt >= retry.maxAttempts) throw failure;
        await sleep(waitMs, request.signal);
      }
    },
  };
}

function isTransient(status: number): boolean {
  return status === 429 || status >= 500;
}

function attemptsNote(attempt: number): string {
  return attempt > 1 ? ` (after ${attempt} attempts)` : "";
}

function statusError(
  response: Response,
  url: string,
  model: string,
  detail: string,
  attempt: number,
): ModelError {
  const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
  const said = detail ? `: ${detail}` : "";
  const tries = attemptsNote(attempt);
  const make = (message: string, hint: string) =>
    new ModelError(message, { status: response.status, hint });
  if (response.status === 401 || response.status === 403) {
    return make(
      `The model endpoint ${url} refused the API key (${status})${said}`,
      "set OPENAI_API_KEY to a key this endpoint accepts",
    );
  }
  if (response.status === 404) {
    return make(
      `The model endpoint ${url} has no model ${JSON.stringify(model)} or no chat completions ` +
        `route (${status})${said}`,
      "check the model name in --model openai:MODEL and the base URL (--base-url or OPENAI_BASE_URL)",
    );
  }
  if (response.status === 429) {
    return make(
      `The model endpoint ${url} is rate-limiting requests (${status})${tries}${said}`,
      "wait a little and run again, or use a key with a higher rate limit",
    );
  }
  if (response.status >= 500) {
    return make(
      `The model endpoint ${url} failed with ${status}${tries}${said}`,
      "the server is having trouble; try again later",
    );
  }
  return make(
    `The model endpoint ${url} rejected the request (${status})${said}`,
    "check the model name and that the endpoint speaks OpenAI Chat Completions",
  );
}

/** The server's own message about an error (`{"error": {"message": …}}`), shortened. */
async function errorDetail(response: Response): Promise<string> {
  let text: string;
  try {
    text = await response.text();
  } catch {
    return "";
  }
  let message = text;
  try {
    const parsed = JSON.parse(text);
    const inner = parsed?.error?.message ?? parsed?.message ?? parsed?.error;
    if (typeof inner === "string") message = inner;
  } catch {
    // not JSON: keep the text
  }
  message = message.replace(/\s+/g, " ").trim();
  return message.length > 300 ? `${message.slice(0, 300)}…` : message;
}

async function readAnswer(
  response: Response,
  url: string,
  signal: AbortSignal,
): Promise<ModelOutput> {
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("application/json")) {
    const parsed = ChatCompletion.safeParse(await response.json().catch(() => null));
    if (!parsed.success) {
      throw new ModelError(
        `The model endpoint ${url} answered with JSON that is not a chat completion`,
      );
    }
    return completionOutput(parsed.data);
  }
  if (!response.body) throw new ModelError(`The model endpoint ${url} answered with an empty body`);
  const stream = new ChatStream();
  let done = false;
  try {
    for await (const event of readServerSentEvents(response.body)) {
      if (event.data === "[DONE]") {
        done = true;
        break;
      }
      let json: unknown;
      try {
        json = JSON.parse(event.data);
      } catch {
        throw new ModelError(
          `The model endpoint ${url} streamed a line that is not JSON: ${event.data.slice(0, 120)}`,
        );
      }
      const chunk = ChatChunk.safeParse(json);
      if (!chunk.success) {
        throw new ModelError(`The model endpoint ${url} streamed a chunk of an unknown shape`);
      }
      if (chunk.data.error) {
        throw new ModelError(
          `The model endpoint ${url} reported an error mid-stream: ${
            chunk.data.error.message ?? "no message"
          }`,
        );
      }
      stream.add(chunk.data);
    }
  } catch (error) {
    if (signal.aborted || error instanceof ModelError) throw error;
    throw new ModelError(
      `The model endpoint ${url} broke off the stream: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (!done && !stream.finished) {
    throw new ModelError(
      `The model endpoint ${url} ended the stream before the answer was complete`,
    );
  }
  return stream.output();
}

/** Retry-After (seconds or an HTTP date) or OpenAI's retry-after-ms, in milliseconds. */
export function retryAfterMs(headers: Headers, nowMs = Date.now()): number | null {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = headers.get("retry-after");
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** Exponential backoff with jitter: between half and all of base·2^(attempt-1), capped. */
export function backoffMs(attempt: number, retry: RetryOptions, random = Math.random): number {
  const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + random() * ceiling / 2);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
