// A2A's JSON-RPC binding over the HTTP server (A2A 1.0 §9): the agent card at its well-known
// path for anyone; everything else only with the bearer token, checked on the head so that a
// refused request's body is never read. Then the A2A-Version check (1.0 only: a request without
// the header is A2A 0.3 by the spec, and reins does not serve 0.3 — it says so with
// VersionNotSupported), the envelope, the method, and the answer as JSON or as Server-Sent Events
// (`data: <JSON-RPC response>` per item, a comment line every 15 s so idle proxies keep the
// stream open).
import { AGENT_CARD_PATH } from "./agent_card.ts";
import type { BearerCheck } from "./auth.ts";
import type { HttpHandler } from "./http/server.ts";
import type { RequestHead } from "./http/head.ts";
import { type HttpResponse, plainResponse } from "./http/response.ts";
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

export const RPC_PATH = "/";
const JSON_TYPE = /^application\/(a2a\+)?json\s*(;.*)?$/i;
const SSE_KEEPALIVE_MS = 15_000;

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
  return {
    head(head) {
      if (head.path === AGENT_CARD_PATH) {
        if (head.method === "GET" || head.method === "HEAD") return card;
        return withHeaders(plainResponse(405, "Use GET"), { allow: "GET, HEAD" });
      }
      if (head.path !== RPC_PATH) return plainResponse(404, "Not found");
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
      const parsed = parseRequest(body, options.maxJsonDepth);
      if (!parsed.ok) return jsonResponse(errorText(parsed.id, parsed.error));
      const { id, method, params } = parsed.request;
      let result: CallResult;
      try {
        checkVersion(requestedVersion(head));
        result = await service.call(method, params);
      } catch (error) {
        return jsonResponse(errorText(id, asRpcError(error, options.onError)));
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
  return {
    status: 200,
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    },
    async stream(write, closed) {
      // One write at a time: items and keep-alive comments must not interleave on the socket.
      let queue: Promise<void> = Promise.resolve();
      const put = (text: string) => queue = queue.then(() => write(text));
      const keepAlive = setInterval(() => {
        put(": keep-alive\n\n").catch(() => {});
      }, SSE_KEEPALIVE_MS);
      try {
        await stream((item) => put(`data: ${resultText(id, item)}\n\n`), closed);
      } catch (error) {
        if (closed.aborted) throw error;
        await put(`data: ${errorText(id, asRpcError(error, onError))}\n\n`);
      } finally {
        clearInterval(keepAlive);
      }
      await queue;
    },
  };
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
