// `openai:MODEL`: any OpenAI-compatible Chat Completions endpoint, streamed. Rate limits (429),
// timeouts (408), server errors (5xx) and unreachable servers are retried a bounded number of
// times by the one outbound policy (lib/net/retry.ts: full jitter, Retry-After honoured); anything
// else fails at once with an error that says what to do. A stream cut halfway is not retried:
// the model may have said things we cannot take back.
import { type Model, ModelError, type ModelOutput, type ModelRequest } from "./model.ts";
import {
  ChatChunk,
  ChatCompletion,
  chatRequestBody,
  ChatStream,
  completionOutput,
} from "./openai_wire.ts";
import { readServerSentEvents } from "./sse.ts";
import { isSandboxRefusal, sandboxRefusal } from "../core/sandbox.ts";
import { outboundFetch } from "../net/outbound.ts";
import { isRetriableStatus, type RetryPolicy, withRetry } from "../net/retry.ts";
import { retryAfterMs } from "../net/retry_after.ts";
import { NO_PROXY_SETTINGS, type ProxySettings } from "../net/route.ts";

export const OPENAI_RETRY: RetryPolicy = {
  attempts: 4,
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
  /** The proxy variables (settings.proxy): a loopback endpoint is never reached through one. */
  proxy?: ProxySettings;
  retry?: Partial<RetryPolicy>;
}

/** A failure worth another try: the endpoint unreachable, or a retriable status. */
class RetriableFailure extends Error {
  constructor(readonly failure: ModelError, readonly waitMs: number | null) {
    super(failure.message);
  }
}

export function openaiModel(options: OpenAIModelOptions): Model {
  const policy = { ...OPENAI_RETRY, ...options.retry };
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
  };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const proxy = options.proxy ?? NO_PROXY_SETTINGS;
  return {
    name: `openai:${options.model}`,
    async complete(request: ModelRequest): Promise<ModelOutput> {
      const body = JSON.stringify(chatRequestBody(options.model, request.history, request.tools));
      const attempt = async (attempt: number): Promise<Response> => {
        let response: Response;
        try {
          response = await outboundFetch(
            new URL(url),
            { method: "POST", headers, body, signal: request.signal },
            { proxy },
          );
        } catch (error) {
          if (request.signal.aborted) throw error;
          // The sandbox's no is final: never retried like an unreachable server.
          if (isSandboxRefusal(error)) throw sandboxRefusal(error as Error);
          throw new RetriableFailure(
            new ModelError(
              `Cannot reach the model endpoint ${url}: ${(error as Error).message}` +
                attemptsNote(attempt),
              {
                hint: "check --base-url (or OPENAI_BASE_URL) and that the server is up",
                cause: error,
              },
            ),
            null,
          );
        }
        if (response.ok) return response;
        const detail = await errorDetail(response);
        const failure = statusError(response, url, options.model, detail, attempt);
        if (!isRetriableStatus(response.status)) throw failure;
        throw new RetriableFailure(failure, retryAfterMs(response.headers));
      };
      let response: Response;
      try {
        response = await withRetry(attempt, policy, {
          isRetriable: (error) => error instanceof RetriableFailure,
          retryAfterMs: (error) => (error as RetriableFailure).waitMs,
          tooLongToWait: (error, waitMs) => {
            const { failure } = error as RetriableFailure;
            return new ModelError(
              `${failure.message}; it asked to retry after ${Math.ceil(waitMs / 1000)} s`,
              { status: failure.status, hint: failure.hint },
            );
          },
          signal: request.signal,
        });
      } catch (error) {
        throw error instanceof RetriableFailure ? error.failure : error;
      }
      return await readAnswer(response, url, request.signal, request.onText);
    },
  };
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
  if (response.status === 408) {
    return make(
      `The model endpoint ${url} timed out waiting for the request (${status})${tries}${said}`,
      "the server or a proxy in front of it is slow; try again later",
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
  onText?: (text: string) => void,
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
      if (onText !== undefined) {
        for (const choice of chunk.data.choices ?? []) {
          if (choice.delta?.content) onText(choice.delta.content);
        }
      }
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
