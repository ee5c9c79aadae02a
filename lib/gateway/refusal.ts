// What the gateway answers itself, in the error shape of the harness's provider so that its CLI
// reads it as it reads that provider's own: a call the budget refuses (400: a client error no CLI
// retries, unlike a 429 or a 5xx) and an upstream that cannot be reached (502, which a CLI treats
// as the provider failing and retries as it would).
import type { Wire } from "./wires.ts";

/** The JSON error body `wire`'s provider sends with `status`. */
export function errorBody(wire: Wire, status: number, message: string): unknown {
  switch (wire) {
    case "anthropic.messages":
    case "anthropic.count_tokens":
      return {
        type: "error",
        error: {
          type: status === 400
            ? "invalid_request_error"
            : status === 429
            ? "rate_limit_error"
            : "api_error",
          message,
        },
      };
    case "openai.responses":
    case "openai.chat":
      return {
        error: {
          message,
          type: status === 400 ? "invalid_request_error" : "server_error",
          code: status === 400 ? "budget_exhausted" : null,
          param: null,
        },
      };
    case "gemini.generate":
    case "gemini.stream":
      return {
        error: {
          code: status,
          message,
          status: status === 400 ? "INVALID_ARGUMENT" : "UNAVAILABLE",
        },
      };
    case "opaque":
      return { error: { message } };
  }
}

/** An answer of the gateway's own: `status` with the provider's error body. */
export function errorResponse(wire: Wire, status: number, message: string): Response {
  return new Response(JSON.stringify(errorBody(wire, status, message)), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** The status a refused call is answered with. */
export const REFUSED_STATUS = 400;

/** The status of a call whose upstream could not be reached. */
export const UNREACHABLE_STATUS = 502;
