// The agent card (A2A 1.0 §8, AgentCard in a2a.proto as ProtoJSON): who this agent is (reins
// around the configured driver), where and how to reach it (JSON-RPC and HTTP+JSON, A2A 1.0, at
// one URL), what it can do (streaming; no push notifications; the ForgetContext extension) and how to
// authenticate (a bearer token). It says nothing of the machine: no paths, no command line.
import { VERSION } from "../core/version.ts";
import { FORGET_EXTENSION, FORGET_METHOD } from "./service.ts";

export const AGENT_CARD_PATH = "/.well-known/agent-card.json";

const HARNESS_NAMES: Record<string, string> = {
  loop: "the built-in reins agent loop",
  claude: "Claude Code",
  codex: "Codex",
  gemini: "Gemini CLI",
  opencode: "opencode",
  command: "a command-line agent",
};

export interface CardOptions {
  /** The URL clients send JSON-RPC requests to. */
  url: string;
  /** The driver turns run on (`claude`, `loop`, …). */
  driver: string;
}

export function agentCard(options: CardOptions): Record<string, unknown> {
  const agent = HARNESS_NAMES[options.driver] ?? options.driver;
  return {
    name: `reins (${options.driver})`,
    description:
      `Runs ${agent} for each message and records every turn as a reins run. Messages on one ` +
      "contextId continue one agent conversation; a task asks for input when the agent waits " +
      "for an approval or an answer.",
    // Both bindings at one URL: JSON-RPC at POST /, HTTP+JSON at its resource paths below it.
    supportedInterfaces: [
      { url: options.url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url: options.url, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
    ],
    version: VERSION,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [{
        uri: FORGET_EXTENSION,
        description: `The JSON-RPC method ${FORGET_METHOD} {contextId} (over HTTP+JSON: POST ` +
          "/contexts/{contextId}:forget) drops the context's harness session, " +
          "so its next message starts a new conversation (as `reins forget` does); its tasks stay.",
        required: false,
        params: { methods: [FORGET_METHOD] },
      }],
    },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: "Bearer",
          description: "The token reins serve was started with (its data root's serve.token, " +
            "or --token-file)",
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: [{
      id: `reins-${options.driver}`,
      name: `${agent[0].toUpperCase()}${agent.slice(1)} through reins`,
      description: `A turn of ${agent}: the message is its prompt, the answer its final text.`,
      tags: ["agent", "reins", options.driver],
      inputModes: ["text/plain", "application/json"],
      outputModes: ["text/plain"],
    }],
  };
}
