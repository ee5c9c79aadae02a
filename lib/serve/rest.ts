// A2A's HTTP+JSON binding (A2A 1.0 §11): the same methods as the JSON-RPC binding, answered by
// the same A2AService, reached by resource paths — POST /message:send and /message:stream,
// GET /tasks and /tasks/{id}, POST /tasks/{id}:cancel, GET or POST /tasks/{id}:subscribe, the
// push notification configs (refused: reins sends none), GET /extendedAgentCard (none), and
// POST /contexts/{id}:forget for reins's forget extension. Errors are `{"error": {code, status,
// message, details}}` (google.rpc.Status) under the HTTP status A2A gives each; on a streaming
// route whose client accepts SSE an error is one `event: error` instead, so that a client reading
// the stream reads it. No tenants: reins serves one agent, and a path with a tenant is not found.
import type { RequestHead } from "./http/head.ts";
import { eventStreamResponse, type HttpResponse, SSE_HEADERS } from "./http/response.ts";
import { ERROR_INFO, type ErrorDetail, errorInfo, RPC, RpcError } from "./jsonrpc.ts";
import type { StreamBody } from "./streams.ts";
import { FORGET_METHOD } from "./service.ts";

/** What a REST request asks of the service. */
export interface RestCall {
  method: string;
  /** The params as the JSON-RPC binding would carry them, but for the body's (see `body`). */
  params: Record<string, unknown>;
  /** How the request body joins the params: it is them, or there is none to read. */
  body: "params" | "none";
  streaming: boolean;
}

/** A path REST serves and how its methods map, or why not: 404 (no such path), 405 (method). */
export type RestRoute =
  | { ok: true; call: RestCall }
  | { ok: false; status: 404 }
  | { ok: false; status: 405; allow: string };

const SEGMENT = "([^/:]+)";
const ROUTES: {
  pattern: RegExp;
  methods: Record<string, (ids: string[], query: URLSearchParams) => RestCall>;
}[] = [
  {
    pattern: /^\/message:send$/,
    methods: { POST: () => call("SendMessage", {}, "params") },
  },
  {
    pattern: /^\/message:stream$/,
    methods: { POST: () => call("SendStreamingMessage", {}, "params", true) },
  },
  {
    pattern: /^\/tasks$/,
    methods: { GET: (_, query) => call("ListTasks", listParams(query), "none") },
  },
  {
    pattern: new RegExp(`^/tasks/${SEGMENT}$`),
    methods: {
      GET: ([id], query) => call("GetTask", { id, ...numbers(query, ["historyLength"]) }, "none"),
    },
  },
  {
    pattern: new RegExp(`^/tasks/${SEGMENT}:cancel$`),
    methods: { POST: ([id]) => call("CancelTask", { id }, "none") },
  },
  {
    pattern: new RegExp(`^/tasks/${SEGMENT}:subscribe$`),
    methods: {
      GET: ([id]) => call("SubscribeToTask", { id }, "none", true),
      POST: ([id]) => call("SubscribeToTask", { id }, "none", true),
    },
  },
  {
    pattern: new RegExp(`^/tasks/${SEGMENT}/pushNotificationConfigs$`),
    methods: {
      GET: ([taskId]) => call("ListTaskPushNotificationConfigs", { taskId }, "none"),
      POST: ([taskId]) => call("CreateTaskPushNotificationConfig", { taskId }, "none"),
    },
  },
  {
    pattern: new RegExp(`^/tasks/${SEGMENT}/pushNotificationConfigs/${SEGMENT}$`),
    methods: {
      GET: ([taskId, id]) => call("GetTaskPushNotificationConfig", { taskId, id }, "none"),
      DELETE: ([taskId, id]) => call("DeleteTaskPushNotificationConfig", { taskId, id }, "none"),
    },
  },
  {
    pattern: /^\/extendedAgentCard$/,
    methods: { GET: () => call("GetExtendedAgentCard", {}, "none") },
  },
  {
    pattern: new RegExp(`^/contexts/${SEGMENT}:forget$`),
    methods: { POST: ([contextId]) => call(FORGET_METHOD, { contextId }, "none") },
  },
];

function call(
  method: string,
  params: Record<string, unknown>,
  body: RestCall["body"],
  streaming = false,
): RestCall {
  return { method, params, body, streaming };
}

/** Query parameters that are numbers in the request message, as numbers when they look so. */
function numbers(query: URLSearchParams, names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const value = query.get(name);
    if (value === null) continue;
    out[name] = /^-?\d{1,10}$/.test(value) ? Number(value) : value;
  }
  return out;
}

function listParams(query: URLSearchParams): Record<string, unknown> {
  const params: Record<string, unknown> = numbers(query, ["pageSize", "historyLength"]);
  for (const name of ["contextId", "status", "pageToken", "statusTimestampAfter"]) {
    const value = query.get(name);
    if (value !== null) params[name] = value;
  }
  const artifacts = query.get("includeArtifacts");
  if (artifacts !== null) {
    params.includeArtifacts = artifacts === "true"
      ? true
      : artifacts === "false"
      ? false
      : artifacts;
  }
  return params;
}

/** The route of a request head: what it calls, or the status that says it calls nothing. */
export function restRoute(head: Pick<RequestHead, "method" | "path" | "query">): RestRoute {
  for (const route of ROUTES) {
    const match = route.pattern.exec(head.path);
    if (match === null) continue;
    const method = head.method === "HEAD" ? "GET" : head.method;
    const make = route.methods[method];
    if (make === undefined) {
      return { ok: false, status: 405, allow: Object.keys(route.methods).join(", ") };
    }
    let ids: string[];
    try {
      ids = match.slice(1).map((segment) => decodeURIComponent(segment));
    } catch {
      return { ok: false, status: 404 };
    }
    return { ok: true, call: make(ids, new URLSearchParams(head.query)) };
  }
  return { ok: false, status: 404 };
}

/** The HTTP status and google.rpc.Status name of each A2A error, as A2A 1.0 maps them. */
const STATUS_OF: Record<number, { http: number; name: string; reason: string }> = {
  [RPC.parseError]: { http: 400, name: "INVALID_ARGUMENT", reason: "INVALID_PARAMS" },
  [RPC.invalidRequest]: { http: 400, name: "INVALID_ARGUMENT", reason: "INVALID_PARAMS" },
  [RPC.invalidParams]: { http: 400, name: "INVALID_ARGUMENT", reason: "INVALID_PARAMS" },
  [RPC.methodNotFound]: { http: 404, name: "NOT_FOUND", reason: "METHOD_NOT_FOUND" },
  [RPC.internalError]: { http: 500, name: "INTERNAL", reason: "INTERNAL_ERROR" },
  [RPC.taskNotFound]: { http: 404, name: "NOT_FOUND", reason: "TASK_NOT_FOUND" },
  [RPC.taskNotCancelable]: {
    http: 409,
    name: "FAILED_PRECONDITION",
    reason: "TASK_NOT_CANCELABLE",
  },
  [RPC.pushNotificationNotSupported]: {
    http: 400,
    name: "FAILED_PRECONDITION",
    reason: "PUSH_NOTIFICATION_NOT_SUPPORTED",
  },
  [RPC.unsupportedOperation]: {
    http: 400,
    name: "FAILED_PRECONDITION",
    reason: "UNSUPPORTED_OPERATION",
  },
  [RPC.contentTypeNotSupported]: {
    http: 415,
    name: "INVALID_ARGUMENT",
    reason: "CONTENT_TYPE_NOT_SUPPORTED",
  },
  [RPC.invalidAgentResponse]: { http: 502, name: "INTERNAL", reason: "INVALID_AGENT_RESPONSE" },
  [RPC.extendedAgentCardNotConfigured]: {
    http: 400,
    name: "FAILED_PRECONDITION",
    reason: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
  },
  [RPC.extensionSupportRequired]: {
    http: 400,
    name: "FAILED_PRECONDITION",
    reason: "EXTENSION_SUPPORT_REQUIRED",
  },
  [RPC.versionNotSupported]: {
    http: 400,
    name: "FAILED_PRECONDITION",
    reason: "VERSION_NOT_SUPPORTED",
  },
};

/**
 * An error as the HTTP+JSON binding answers it: its HTTP status, and the body. The details lead
 * with the A2A reason's ErrorInfo (what a client maps to an error type), reins's own details
 * after it; a reason of reins's own (TASK_TERMINAL, say) stays in that ErrorInfo's metadata.
 */
export function restError(
  error: RpcError,
  override?: { http: number; name: string },
): { status: number; body: string } {
  const mapped = { ...(STATUS_OF[error.code] ?? STATUS_OF[RPC.internalError]), ...override };
  const details: ErrorDetail[] = [...(error.data ?? [])];
  const own = details.findIndex((d) => d["@type"] === ERROR_INFO);
  if (own >= 0 && details[own].reason === mapped.reason) {
    details.unshift(...details.splice(own, 1));
  } else {
    const metadata = own >= 0
      ? {
        ...(details[own].metadata as Record<string, string> | undefined),
        reinsReason: String(details[own].reason),
      }
      : {};
    details.unshift(errorInfo(mapped.reason, metadata));
  }
  const body = {
    error: { code: mapped.http, status: mapped.name, message: error.message, details },
  };
  return { status: mapped.http, body: JSON.stringify(body) };
}

export function restErrorResponse(
  error: RpcError,
  override?: { http: number; name: string },
): HttpResponse {
  const { status, body } = restError(error, override);
  return { status, headers: { "content-type": "application/json" }, body };
}

/** Whether the request's Accept lets the answer be a stream of events. */
export function acceptsEventStream(head: Pick<RequestHead, "headers">): boolean {
  return /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(head.headers.get("accept") ?? "");
}

/** An error on a streaming route, as the one event of an event stream (`event: error`). */
export function restErrorEvent(error: RpcError): HttpResponse {
  return {
    status: 200,
    headers: SSE_HEADERS,
    body: `event: error\ndata: ${restError(error).body}\n\n`,
  };
}

/**
 * A stream's items as `data: <StreamResponse>` events; a failure once it has begun is one
 * `event: error` (asError turns what was thrown into the RpcError to tell).
 */
export function restStream(
  stream: StreamBody,
  asError: (error: unknown) => RpcError,
  keepAliveMs: number,
): HttpResponse {
  return eventStreamResponse(
    stream,
    keepAliveMs,
    (item) => `data: ${JSON.stringify(item)}\n\n`,
    (error) => `event: error\ndata: ${restError(asError(error)).body}\n\n`,
  );
}

/** The params of a call whose body is its params: the body's object, ids from the path kept. */
export function bodyParams(
  routed: RestCall,
  body: unknown,
): Record<string, unknown> {
  if (routed.body === "none") return routed.params;
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new RpcError(RPC.invalidParams, "Invalid parameters: the body must be a JSON object", [
      {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        fieldViolations: [{ field: "body", description: "must be a JSON object" }],
      },
    ]);
  }
  return { ...(body as Record<string, unknown>), ...routed.params };
}
