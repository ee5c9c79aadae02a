// The JSON-RPC 2.0 envelope as A2A's JSON-RPC binding uses it (A2A 1.0 §9): one request object
// per HTTP request, an answer object with the same id, errors with the spec's codes and `data` as
// an array of typed details (`@type`, ProtoJSON Any). What is refused, and why: batches (no A2A
// method is batched, and streams cannot be), notifications (every A2A method answers something
// the caller needs), texts nested deeper than a limit (see json_depth.ts).
import { depthExceededAt } from "./json_depth.ts";

export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  invalidAgentResponse: -32006,
  extendedAgentCardNotConfigured: -32007,
  extensionSupportRequired: -32008,
  versionNotSupported: -32009,
} as const;
export type RpcCode = typeof RPC[keyof typeof RPC];
export const RPC_CODES: readonly number[] = Object.values(RPC);

export type RpcId = string | number | null;

/** One typed detail of an error (`google.rpc.ErrorInfo`, `google.rpc.BadRequest`, …). */
export type ErrorDetail = { "@type": string } & Record<string, unknown>;

export const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";
export const BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest";
export const A2A_DOMAIN = "a2a-protocol.org";

/** An error answered as a JSON-RPC error object. */
export class RpcError extends Error {
  readonly code: RpcCode;
  readonly data: ErrorDetail[] | undefined;
  constructor(code: RpcCode, message: string, data?: ErrorDetail[]) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data;
  }
}

/** `google.rpc.ErrorInfo` with the A2A domain. */
export function errorInfo(reason: string, metadata: Record<string, string> = {}): ErrorDetail {
  return { "@type": ERROR_INFO, reason, domain: A2A_DOMAIN, metadata };
}

/** -32602 naming the field and what is wrong with it. */
export function invalidParams(field: string, description: string): RpcError {
  return new RpcError(RPC.invalidParams, `Invalid parameters: ${field}: ${description}`, [
    { "@type": BAD_REQUEST, fieldViolations: [{ field, description }] },
  ]);
}

export interface RpcRequest {
  id: string | number;
  method: string;
  params: Record<string, unknown>;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * The request in `body`, or the error to answer with (and the id to answer it under, when the
 * request got far enough to have one).
 */
export function parseRequest(
  body: Uint8Array,
  maxDepth: number,
): { ok: true; request: RpcRequest } | { ok: false; id: RpcId; error: RpcError } {
  const fail = (error: RpcError, id: RpcId = null) => ({ ok: false as const, id, error });
  const deepAt = depthExceededAt(body, maxDepth);
  if (deepAt >= 0) {
    return fail(
      new RpcError(
        RPC.invalidRequest,
        `Request payload validation error: JSON nested deeper than ${maxDepth} levels (at byte ${deepAt})`,
      ),
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(body));
  } catch (error) {
    const why = error instanceof TypeError ? "the body is not UTF-8" : (error as Error).message;
    return fail(new RpcError(RPC.parseError, `Invalid JSON payload: ${why}`));
  }
  if (Array.isArray(value)) {
    return fail(
      new RpcError(RPC.invalidRequest, "Request payload validation error: batches are not served"),
    );
  }
  if (typeof value !== "object" || value === null) {
    return fail(
      new RpcError(RPC.invalidRequest, "Request payload validation error: not a request object"),
    );
  }
  const envelope = value as Record<string, unknown>;
  const rawId = envelope.id;
  const id: RpcId = typeof rawId === "string" || (typeof rawId === "number" && isFinite(rawId))
    ? rawId
    : null;
  if (envelope.jsonrpc !== "2.0") {
    return fail(
      new RpcError(RPC.invalidRequest, 'Request payload validation error: jsonrpc must be "2.0"'),
      id,
    );
  }
  if (!("id" in envelope)) {
    return fail(
      new RpcError(
        RPC.invalidRequest,
        "Request payload validation error: an id is required (notifications are not served)",
      ),
    );
  }
  if (id === null || (typeof id === "number" && !Number.isInteger(id))) {
    return fail(
      new RpcError(
        RPC.invalidRequest,
        "Request payload validation error: id must be a string or an integer",
      ),
    );
  }
  if (typeof envelope.method !== "string" || envelope.method === "") {
    return fail(
      new RpcError(RPC.invalidRequest, "Request payload validation error: method must be a name"),
      id,
    );
  }
  const params = envelope.params ?? {};
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    return fail(invalidParams("params", "must be an object"), id);
  }
  return {
    ok: true,
    request: { id, method: envelope.method, params: params as Record<string, unknown> },
  };
}

/** The text of a result answer. */
export function resultText(id: RpcId, result: unknown): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result)}}`;
}

/** The text of an error answer. */
export function errorText(id: RpcId, error: RpcError): string {
  const body: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.data !== undefined) body.data = error.data;
  return JSON.stringify({ jsonrpc: "2.0", id, error: body });
}
