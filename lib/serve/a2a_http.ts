// A2A over the HTTP server: the agent card at its well-known path for anyone; the JSON-RPC
// binding (A2A 1.0 §9) at POST /, and the HTTP+JSON binding (§11, rest.ts) at its resource
// paths, both answered by one A2AService. Everything but the card needs the bearer token, checked
// on the head so that a refused request's body is never read. Then the A2A-Version check (1.0
// only: a request without the header is A2A 0.3 by the spec, and reins does not serve 0.3 — it
// says so with VersionNotSupported), the envelope or route, the method, and the answer as JSON or
// as Server-Sent Events (one item per event, a comment line every 15 s so idle proxies keep the
// stream open). An error on a streaming method, asked for with Accept: text/event-stream, is one
// event of such a stream, so that a client that reads only streams reads it.
import { AGENT_CARD_PATH } from "./agent_card.ts";
import type { BearerCheck } from "./auth.ts";
import type { HttpHandler } from "./http/server.ts";
import type { RequestHead } from "./http/head.ts";
import {
  eventStreamResponse,
  type HttpResponse,
  plainResponse,
  SSE_HEADERS,
} from "./http/response.ts";
import { depthExceededAt } from "./json_depth.ts";
import {
  errorInfo,
  errorText,
  parseRequest,
  resultText,
  RPC,
  RpcError,
  type RpcId,
} from "./jsonrpc.ts";
import type { A2AService, CallResult } from "./service.ts";
import { FORGET_EXTENSION, FORGET_METHOD } from "./service.ts";
import {
  acceptsEventStream,
  bodyParams,
  restErrorEvent,
  restErrorResponse,
  restRoute,
  restStream,
} from "./rest.ts";

export const RPC_PATH = "/";
const JSON_TYPE = /^application\/(a2a\+)?json\s*(;.*)?$/i;
const SSE_KEEPALIVE_MS = 15_000;
/** The JSON-RPC methods whose answer is a stream. */
const STREAMING_METHODS = new Set(["SendStreamingMessage", "SubscribeToTask"]);
const utf8 = new TextDecoder("utf-8", { fatal: true });

export interface A2AHttpOptions {
  service: A2AService;
  /** The card as JSON text (built once: it changes only with the server's config). */
  cardJson: string;
  bearer: BearerCheck;
  maxJsonDepth: number;
  /** For errors that reach no client (a bug): logged by the command. */
  onError?(error: unknown): void;
}

function jsonResponse(text: string, extra: Record<string, string> = {}): HttpResponse {
  return { status: 200, headers: { "content-type": "application/json", ...extra }, body: text };
}

/** The A2A-Version the request asks for: its header, else its query parameter, else "". */
function requestedVersion(head: RequestHead): string {
  const header = head.headers.get("a2a-version");
  if (header !== undefined) return header.trim();
  if (head.query !== "") {
    const value = new URLSearchParams(head.query).get("A2A-Version");
    if (value !== null) return value.trim();
  }
  return "";
}

function checkVersion(version: string): void {
  // Major.Minor decides (A2A 1.0 §3.6); a patch number, though it should not be sent, is ignored.
  if (/^1(\.0)?(\.\d+)?$/.test(version)) return;
  const supported = [errorInfo("VERSION_NOT_SUPPORTED", { supportedVersions: "1.0" })];
  if (version === "") {
    throw new RpcError(
      RPC.versionNotSupported,
      "This request has no A2A-Version header, which means A2A 0.3: reins serve speaks A2A 1.0 only (send A2A-Version: 1.0)",
      supported,
    );
  }
  throw new RpcError(
    RPC.versionNotSupported,
    `A2A-Version ${
      JSON.stringify(version)
    } is not served here: reins serve speaks A2A 1.0 (send A2A-Version: 1.0)`,
    supported,
  );
}

export function a2aHandler(options: A2AHttpOptions): HttpHandler {
  const { service, bearer } = options;
  const card: HttpResponse = {
    status: 200,
    headers: {
      "content-type": "application/json",
      "cache-control": "public, max-age=300",
      etag: `"${hash(options.cardJson)}"`,
    },
    body: options.cardJson,
  };
  // ---- the HTTP+JSON binding (rest.ts has its routes and error shapes) ----------------------
  const restHead = (head: RequestHead): HttpResponse | null => {
    const route = restRoute(head);
    if (!route.ok) {
      if (route.status === 405) {
        return withHeaders(
          restErrorResponse(
            new RpcError(RPC.methodNotFound, `${head.method} is not served at ${head.path}`),
            { http: 405, name: "UNIMPLEMENTED" },
          ),
          { allow: route.allow },
        );
      }
      return restErrorResponse(new RpcError(RPC.methodNotFound, `Not found: ${head.path}`));
    }
    if (!bearer.allows(head.headers.get("authorization"))) {
      return withHeaders(plainResponse(401, ""), { "www-authenticate": 'Bearer realm="reins"' });
    }
    // A body is JSON; a POST without one (CancelTask) needs no Content-Type.
    const hasBody = head.chunked || (head.contentLength ?? 0) > 0;
    if (
      route.call.body === "params" && hasBody &&
      !JSON_TYPE.test(head.headers.get("content-type") ?? "")
    ) {
      return restErrorResponse(
        new RpcError(
          RPC.contentTypeNotSupported,
          "Send the request body as Content-Type: application/json",
        ),
      );
    }
    return null;
  };
  const restHandle = async (head: RequestHead, body: Uint8Array): Promise<HttpResponse> => {
    const route = restRoute(head);
    if (!route.ok) return restErrorResponse(new RpcError(RPC.internalError, "Not routed"));
    const { call } = route;
    let result: CallResult;
    try {
      checkVersion(requestedVersion(head));
      const params = call.body === "params"
        ? bodyParams(call, jsonBody(body, options.maxJsonDepth))
        : call.params;
      result = await service.call(call.method, params);
    } catch (error) {
      const rpcError = asRpcError(error, options.onError);
      return call.streaming && acceptsEventStream(head)
        ? restErrorEvent(rpcError)
        : restErrorResponse(rpcError);
    }
    if ("result" in result) return jsonResponse(JSON.stringify(result.result));
    if ("resultJson" in result) return jsonResponse(result.resultJson);
    return restStream(
      result.stream,
      (error) => asRpcError(error, options.onError),
      SSE_KEEPALIVE_MS,
    );
  };

  return {
    head(head) {
      if (head.path === AGENT_CARD_PATH) {
        if (head.method === "GET" || head.method === "HEAD") return card;
        return withHeaders(plainResponse(405, "Use GET"), { allow: "GET, HEAD" });
      }
      if (head.path !== RPC_PATH) return restHead(head);
      if (head.method !== "POST") {
        return withHeaders(plainResponse(405, "Send JSON-RPC requests with POST"), {
          allow: "POST",
        });
      }
      if (!bearer.allows(head.headers.get("authorization"))) {
        return withHeaders(plainResponse(401, ""), { "www-authenticate": 'Bearer realm="reins"' });
      }
      if (!JSON_TYPE.test(head.headers.get("content-type") ?? "")) {
        return plainResponse(415, "Send JSON-RPC requests as Content-Type: application/json");
      }
      return null;
    },

    async handle(head, body) {
      if (head.path !== RPC_PATH) return await restHandle(head, body);
      const parsed = parseRequest(body, options.maxJsonDepth);
      if (!parsed.ok) return jsonResponse(errorText(parsed.id, parsed.error));
      const { id, method, params } = parsed.request;
      let result: CallResult;
      try {
        checkVersion(requestedVersion(head));
        result = await service.call(method, params);
      } catch (error) {
        const text = errorText(id, asRpcError(error, options.onError));
        if (STREAMING_METHODS.has(method) && acceptsEventStream(head)) {
          return { status: 200, headers: SSE_HEADERS, body: `data: ${text}\n\n` };
        }
        return jsonResponse(text);
      }
      const extra: Record<string, string> = {};
      if (method === FORGET_METHOD && requestsExtension(head, FORGET_EXTENSION)) {
        extra["a2a-extensions"] = FORGET_EXTENSION;
      }
      if ("result" in result) return jsonResponse(resultText(id, result.result), extra);
      if ("resultJson" in result) {
        return jsonResponse(
          `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result.resultJson}}`,
        );
      }
      return sseResponse(id, result.stream, options.onError);
    },
  };
}

/** A REST request's body as JSON, under the same depth limit as JSON-RPC's. */
function jsonBody(body: Uint8Array, maxDepth: number): unknown {
  if (body.length === 0) return {};
  const deepAt = depthExceededAt(body, maxDepth);
  if (deepAt >= 0) {
    throw new RpcError(
      RPC.invalidRequest,
      `Request payload validation error: JSON nested deeper than ${maxDepth} levels (at byte ${deepAt})`,
    );
  }
  try {
    return JSON.parse(utf8.decode(body));
  } catch (error) {
    const why = error instanceof TypeError ? "the body is not UTF-8" : (error as Error).message;
    throw new RpcError(RPC.parseError, `Invalid JSON payload: ${why}`);
  }
}

function requestsExtension(head: RequestHead, uri: string): boolean {
  return (head.headers.get("a2a-extensions") ?? "").split(",").some((v) => v.trim() === uri);
}

function withHeaders(response: HttpResponse, headers: Record<string, string>): HttpResponse {
  return { ...response, headers: { ...response.headers, ...headers } };
}

function asRpcError(error: unknown, onError: ((error: unknown) => void) | undefined): RpcError {
  if (error instanceof RpcError) return error;
  onError?.(error);
  return new RpcError(RPC.internalError, "Internal error: the server could not answer this");
}

function sseResponse(
  id: RpcId,
  stream: Extract<CallResult, { stream: unknown }>["stream"],
  onError: ((error: unknown) => void) | undefined,
): HttpResponse {
  return eventStreamResponse(
    stream,
    SSE_KEEPALIVE_MS,
    (item) => `data: ${resultText(id, item)}\n\n`,
    (error) => `data: ${errorText(id, asRpcError(error, onError))}\n\n`,
  );
}

/** A short stable digest for the card's ETag (FNV-1a; not for security). */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}
