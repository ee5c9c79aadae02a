// The ingestion API as the few calls a report makes: provision, start, batch, ongoing, result and
// recording. One attempt per call: retrying is deliver.ts's business, and the errors here say
// whether a retry can help (`transient`). Every request goes out through lib/net/outbound.ts, so
// it is sent in origin form unless it really goes through a proxy, and loopback never does.
import { PlatformError, UsageError } from "../core/errors.ts";
import type { Settings } from "../core/mod.ts";
import { VERSION } from "../core/version.ts";
import { boundedText } from "../net/http1.ts";
import { outboundFetch } from "../net/outbound.ts";
import { isRetriableStatus } from "../net/retry.ts";
import { retryAfterMs } from "../net/retry_after.ts";
import { isLoopbackHost, NO_PROXY_SETTINGS, type ProxySettings, type Route } from "../net/route.ts";
import {
  multipartBody,
  multipartLayout,
  RecordingChangedError,
  type RecordingFile,
} from "./multipart.ts";
import {
  BatchAnswer,
  INGESTION_PREFIX,
  ProvisionAnswer,
  type ProvisionBody,
  type ResultBody,
  StartAnswer,
  type StartBody,
} from "./wire.ts";
import type { z } from "zod";

export type PlatformSettings = Settings["platform"];

/** Where reports go and with which keys: settings checked for use. */
export interface PlatformTarget {
  /** The base URL, without a trailing slash. */
  url: string;
  apiKey: string;
  secretKey: string;
  workspaceId: string | null;
  jobId: string | null;
}

/** Why reports cannot be sent with these settings, or null when they can. */
export function notConfiguredReason(settings: PlatformSettings): string | null {
  const missing = [
    settings.url ? null : "HARNESS_PLATFORM_URL",
    settings.apiKey ? null : "HARNESS_PLATFORM_API_KEY",
    settings.secretKey ? null : "HARNESS_PLATFORM_SECRET_KEY",
  ].filter((name): name is string => name !== null);
  return missing.length ? `${missing.join(", ")} not set` : null;
}

/** Checks the settings and returns the target, or throws a UsageError that says what to set. */
export function platformTarget(settings: PlatformSettings): PlatformTarget {
  const missing = notConfiguredReason(settings);
  if (missing) {
    throw new UsageError(`Cannot report to the platform: ${missing}`, {
      hint: "set HARNESS_PLATFORM_URL, HARNESS_PLATFORM_API_KEY and HARNESS_PLATFORM_SECRET_KEY " +
        "(or FI_BASE_URL, FI_API_KEY and FI_SECRET_KEY)",
    });
  }
  const url = new URL(settings.url!);
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname) && !settings.allowHttp) {
    throw new UsageError(
      `Refusing to send the platform keys in clear text to ${url.host}: HARNESS_PLATFORM_URL is http://`,
      { hint: "use https://, or set HARNESS_PLATFORM_ALLOW_HTTP=1 if this network is trusted" },
    );
  }
  for (
    const [name, value] of [["API key", settings.apiKey!], ["secret key", settings.secretKey!]]
  ) {
    if (/[\r\n\0]/.test(value)) {
      throw new UsageError(`Cannot use the platform ${name}: it contains a line break`, {
        hint: "set it again without the trailing newline",
      });
    }
  }
  return {
    url: settings.url!.replace(/\/+$/, ""),
    apiKey: settings.apiKey!,
    secretKey: settings.secretKey!,
    workspaceId: settings.workspaceId,
    jobId: settings.jobId,
  };
}

/** A request the platform refused or that could not be sent: says the call and the reason. */
export class PlatformRequestError extends PlatformError {
  readonly method: string;
  readonly path: string;
  /** The first 400 characters of the answer's body. */
  readonly detail: string;
  /** What the answer's Retry-After asked for, in ms. */
  readonly retryAfterMs: number | null;
  constructor(
    message: string,
    fields: {
      method: string;
      path: string;
      status?: number;
      detail?: string;
      transient: boolean;
      retryAfterMs?: number | null;
      hint?: string;
      cause?: unknown;
    },
  ) {
    super(message, {
      status: fields.status,
      transient: fields.transient,
      hint: fields.hint,
      cause: fields.cause,
    });
    this.name = "PlatformRequestError";
    this.method = fields.method;
    this.path = fields.path;
    this.detail = fields.detail ?? "";
    this.retryAfterMs = fields.retryAfterMs ?? null;
  }
}

function hintFor(status: number): string | undefined {
  if (status === 401 || status === 403) {
    return "check HARNESS_PLATFORM_API_KEY, HARNESS_PLATFORM_SECRET_KEY and " +
      "HARNESS_PLATFORM_WORKSPACE_ID (or FI_API_KEY and FI_SECRET_KEY)";
  }
  if (status === 404 || status === 405) {
    return "check HARNESS_PLATFORM_URL: it should be the platform's base URL, without /simulate/api";
  }
  if (status >= 300 && status < 400) {
    return "point HARNESS_PLATFORM_URL at the address the platform redirects to";
  }
  if (isRetriableStatus(status)) return "reins report --pending sends it again later";
  return undefined;
}

export interface ClientOptions {
  /** Per JSON request, from sending to the answer's last byte; the seed's 120 s by default. */
  timeoutMs?: number;
  /**
   * Once an answer's head has come, its body must be whole within this (10 s by default): the
   * platform's answers are small, and one dribbled a byte at a time would hold a report for as
   * long as timeoutMs allows, on each of its tries.
   */
  bodyTimeoutMs?: number;
  /** An upload gives up after this long without progress. */
  uploadIdleTimeoutMs?: number;
  /**
   * How recordings travel: "direct" is a socket of our own with a Content-Length; "fetch" is a
   * chunked stream through fetch (and so through a proxy). "auto": as lib/net/route.ts decides
   * (direct unless a proxy is in the way).
   */
  uploadTransport?: "auto" | "direct" | "fetch";
  /** The proxy variables (settings.proxy); none by default. */
  proxy?: ProxySettings;
}

type Method = "POST" | "PATCH";

/** An answer read whole (up to a limit), as the platform's answers are small. */
interface PlainResponse {
  status: number;
  headers: Headers;
  text: string;
}

const MAX_ANSWER_BYTES = 1024 * 1024;

/** Why an answer's body was given up: see ClientOptions.bodyTimeoutMs. */
class BodyTooSlow extends Error {
  constructor() {
    super("the answer's body came too slowly");
    this.name = "BodyTooSlow";
  }
}

/** The ingestion API. Holds nothing open between calls; close() is kept for callers' `using`. */
export class PlatformClient {
  readonly target: PlatformTarget;
  readonly #timeoutMs: number;
  readonly #bodyTimeoutMs: number;
  readonly #uploadIdleMs: number;
  readonly #uploadRoute: Route | undefined;
  readonly #proxy: ProxySettings;

  constructor(target: PlatformTarget, options: ClientOptions = {}) {
    this.target = target;
    this.#timeoutMs = options.timeoutMs ?? 120_000;
    this.#bodyTimeoutMs = options.bodyTimeoutMs ?? 10_000;
    this.#uploadIdleMs = options.uploadIdleTimeoutMs ?? 120_000;
    this.#proxy = options.proxy ?? NO_PROXY_SETTINGS;
    const transport = options.uploadTransport ?? "auto";
    this.#uploadRoute = transport === "auto" ? undefined : transport;
  }

  close(): void {}

  [Symbol.dispose](): void {
    this.close();
  }

  #headers(idempotencyKey: string | undefined): Record<string, string> {
    const headers: Record<string, string> = {
      "Accept": "application/json",
      "User-Agent": `reins/${VERSION}`,
      "X-Api-Key": this.target.apiKey,
      "X-Secret-Key": this.target.secretKey,
    };
    if (this.target.workspaceId) headers["X-Workspace-Id"] = this.target.workspaceId;
    if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
    return headers;
  }

  #url(path: string): URL {
    return new URL(`${this.target.url}${INGESTION_PREFIX}${path}`);
  }

  /** Turns a response into its unwrapped JSON, or a PlatformRequestError. */
  #answer(method: string, path: string, response: PlainResponse): unknown {
    const { status, text } = response;
    if (status < 200 || status >= 300) {
      const detail = text.slice(0, 400);
      const location = response.headers.get("location");
      const shown = status >= 300 && status < 400 && location
        ? `redirected to ${location}`
        : detail;
      throw new PlatformRequestError(`${method} ${path} failed (${status}): ${shown}`.trimEnd(), {
        method,
        path,
        status,
        detail,
        transient: isRetriableStatus(status),
        retryAfterMs: retryAfterMs(response.headers),
        hint: hintFor(status),
      });
    }
    let body: unknown = {};
    // No body at all (a 204, say) is an answer without a payload; a body of blanks is not JSON.
    if (text !== "" && text.trim() === "") {
      throw new PlatformRequestError(
        `${method} ${path} answered ${status} with a body of only whitespace (${text.length} bytes), not JSON`,
        { method, path, status, detail: JSON.stringify(text.slice(0, 40)), transient: false },
      );
    }
    if (text !== "") {
      try {
        body = JSON.parse(text);
      } catch {
        throw new PlatformRequestError(
          `${method} ${path} answered ${status} with a body that is not JSON: ${
            text.slice(0, 400)
          }`,
          { method, path, status, detail: text.slice(0, 400), transient: false },
        );
      }
    }
    // The platform wraps its answers in {"result": …}; callers read the payload itself.
    if (body !== null && typeof body === "object" && !Array.isArray(body)) {
      return "result" in body ? (body as { result: unknown }).result : body;
    }
    return {};
  }

  #unreachable(method: string, path: string, error: unknown): PlatformRequestError {
    const reason = error instanceof BodyTooSlow
      ? `the answer's body was not whole ${this.#bodyTimeoutMs / 1000} s after its head`
      : error instanceof DOMException && error.name === "TimeoutError"
      ? `no answer within ${Math.round(this.#timeoutMs / 1000)} s`
      : (error as Error)?.message ?? String(error);
    return new PlatformRequestError(`${method} ${path} could not be sent: ${reason}`, {
      method,
      path,
      transient: true,
      hint: "check that the platform is up and HARNESS_PLATFORM_URL is right; " +
        "reins report --pending sends it again later",
      cause: error,
    });
  }

  /** One JSON call; the answer unwrapped from `result`. */
  async call(
    method: Method,
    path: string,
    payload: unknown,
    options: { idempotencyKey?: string } = {},
  ): Promise<unknown> {
    let response: PlainResponse;
    const body = new AbortController();
    let bodyTimer: ReturnType<typeof setTimeout> | undefined;
    try {
      const answer = await outboundFetch(this.#url(path), {
        method,
        headers: { ...this.#headers(options.idempotencyKey), "Content-Type": "application/json" },
        body: JSON.stringify(payload),
        redirect: "manual",
        signal: AbortSignal.any([AbortSignal.timeout(this.#timeoutMs), body.signal]),
      }, { proxy: this.#proxy });
      bodyTimer = setTimeout(() => body.abort(new BodyTooSlow()), this.#bodyTimeoutMs);
      response = {
        status: answer.status,
        headers: answer.headers,
        text: await boundedText(answer, MAX_ANSWER_BYTES),
      };
    } catch (error) {
      if (error instanceof Deno.errors.NotCapable) throw error;
      throw this.#unreachable(method, path, body.signal.aborted ? body.signal.reason : error);
    } finally {
      clearTimeout(bodyTimer);
    }
    return this.#answer(method, path, response);
  }
  #parse<T extends z.ZodType>(schema: T, method: string, path: string, value: unknown): z.infer<T> {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw new PlatformRequestError(
      `${method} ${path} answered without ${issue.path.join(".") || "a usable body"}: ${
        JSON.stringify(value).slice(0, 400)
      }`,
      { method, path, transient: false },
    );
  }

  async provision(body: ProvisionBody, idempotencyKey?: string): Promise<ProvisionAnswer> {
    const path = "/run-tests/provision/";
    return this.#parse(
      ProvisionAnswer,
      "POST",
      path,
      await this.call("POST", path, body, { idempotencyKey }),
    );
  }

  async start(
    runTestId: string,
    body: StartBody,
    idempotencyKey?: string,
  ): Promise<{ test_execution_id: string }> {
    const path = `/run-tests/${encodeURIComponent(runTestId)}/test-executions/`;
    return this.#parse(
      StartAnswer,
      "POST",
      path,
      await this.call("POST", path, body, { idempotencyKey }),
    );
  }

  async batch(
    testExecutionId: string,
    count: number,
    idempotencyKey?: string,
  ): Promise<{ call_execution_ids: string[] }> {
    const path = `/test-executions/${encodeURIComponent(testExecutionId)}/batch/`;
    return this.#parse(
      BatchAnswer,
      "POST",
      path,
      await this.call("POST", path, { count }, { idempotencyKey }),
    );
  }

  ongoing(callExecutionId: string, idempotencyKey?: string): Promise<unknown> {
    const path = `/call-executions/${encodeURIComponent(callExecutionId)}/status/`;
    return this.call("PATCH", path, { status: "ongoing" }, { idempotencyKey });
  }

  result(callExecutionId: string, payload: ResultBody, idempotencyKey?: string): Promise<unknown> {
    const path = `/call-executions/${encodeURIComponent(callExecutionId)}/result/`;
    return this.call("PATCH", path, payload, { idempotencyKey });
  }

  /**
   * Uploads one recording as `multipart/form-data` (`file` + `sha256`), streamed from disk. The
   * file must still be the one attached: a size or digest that differs is a RecordingChangedError,
   * found before the upload for the size and as the bytes go out for the digest.
   */
  async recording(
    callExecutionId: string,
    file: RecordingFile,
    idempotencyKey?: string,
  ): Promise<unknown> {
    const path = `/call-executions/${encodeURIComponent(callExecutionId)}/recording/`;
    const method = "POST";
    const size = (await Deno.stat(file.path)).size;
    if (size !== file.bytes) {
      throw new RecordingChangedError(
        `Cannot send the recording ${
          JSON.stringify(file.name)
        }: it has ${size} bytes, not the ${file.bytes} it was attached with`,
      );
    }
    const layout = multipartLayout(file);
    const headers = { ...this.#headers(idempotencyKey), "Content-Type": layout.contentType };
    // What the body itself threw (a changed file) is the reason, whatever the transport made of it.
    let bodyError: unknown = null;
    const chunks = async function* (fresh: boolean) {
      try {
        yield* multipartBody(file, layout, { freshChunks: fresh });
      } catch (error) {
        bodyError = error;
        throw error;
      }
    };
    let response: PlainResponse;
    try {
      const answer = await outboundFetch(this.#url(path), {
        method,
        headers,
        body: { length: layout.length, chunks },
        redirect: "manual",
        idleTimeoutMs: this.#uploadIdleMs,
      }, { proxy: this.#proxy, route: this.#uploadRoute });
      response = {
        status: answer.status,
        headers: answer.headers,
        text: await boundedText(answer, MAX_ANSWER_BYTES),
      };
    } catch (error) {
      if (bodyError !== null) throw bodyError;
      if (error instanceof Deno.errors.NotCapable) throw error;
      if (error instanceof TypeError || error instanceof DOMException) {
        throw this.#unreachable(method, path, error);
      }
      throw error;
    }
    return this.#answer(method, path, response);
  }
}
