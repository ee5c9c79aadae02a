// Scripted models: `mock:FILE` (a JSON list of responses, served in order) and the recorded model
// that replay builds from a run's `model.completed` payloads. Both ignore what they are sent;
// running out of responses is a failure that says so, never a silent empty answer.
import { z } from "zod";
import { UsageError } from "../core/errors.ts";
import { CallUsage } from "../store/contracts.ts";
import { defaultStopReason, type Model, ModelError, type ModelOutput } from "./model.ts";

const MockToolCall = z.object({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  args: z.unknown().optional(),
}).strict();

/** One response of a mock script; everything optional, like a model's answer. */
export const MockResponse = z.object({
  text: z.string().nullable().optional(),
  toolCalls: z.array(MockToolCall).optional(),
  usage: CallUsage.nullable().optional(),
  stopReason: z.string().nullable().optional(),
  reasoning: z.string().nullable().optional(),
}).strict();
export type MockResponse = z.infer<typeof MockResponse>;

export const MockScript = z.array(MockResponse);

/** Reads and checks a mock script; a bad file is a UsageError naming the file and JSON path. */
export async function loadMockScript(path: string): Promise<MockResponse[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message;
    throw new UsageError(`Cannot read the mock model file ${path}: ${why}`, {
      hint: "pass --model mock:FILE with a JSON list of responses",
      cause: error,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `Cannot parse the mock model file ${path}: ${(error as Error).message}`,
      { hint: "the file must be JSON: a list of {text, toolCalls, usage, stopReason}" },
    );
  }
  const parsed = MockScript.safeParse(raw);
  if (!parsed.success) {
    throw new UsageError(
      `Cannot use the mock model file ${path}: ${jsonPathIssue(parsed.error)}`,
      { hint: "each response is {text?, toolCalls?: [{id?, name, args?}], usage?, stopReason?}" },
    );
  }
  return parsed.data;
}

/** `expected string, received number at $[2].toolCalls[0].name`. */
function jsonPathIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  const path = issue.path.map((part) => typeof part === "number" ? `[${part}]` : `.${String(part)}`)
    .join("");
  return `${issue.message} at $${path}`;
}

/** A model that serves `responses` in order. `source` names the script in errors. */
export function scriptedModel(
  responses: readonly MockResponse[],
  options: { name: string; source: string },
): Model {
  let next = 0;
  return {
    name: options.name,
    complete() {
      const index = next++;
      if (index >= responses.length) {
        return Promise.reject(
          new ModelError(
            `The mock model ${options.source} has no response left for model call ${
              index + 1
            }: the script has ${responses.length}`,
            { hint: "add responses, or end the script with one that has no toolCalls" },
          ),
        );
      }
      const response = responses[index];
      const toolCalls = (response.toolCalls ?? []).map((call, i) => ({
        id: call.id ?? `call_${index + 1}_${i + 1}`,
        name: call.name,
        args: call.args ?? {},
      }));
      const output: ModelOutput = {
        text: response.text ?? null,
        toolCalls,
        stopReason: response.stopReason ?? defaultStopReason(toolCalls),
        usage: response.usage ?? null,
        reasoning: response.reasoning ?? null,
      };
      return Promise.resolve(output);
    },
  };
}

/** `mock:FILE`: the script read from `path` now, served in order. */
export async function mockModel(path: string): Promise<Model> {
  const responses = await loadMockScript(path);
  return scriptedModel(responses, { name: `mock:${path}`, source: path });
}

/**
 * The model replay uses: recorded `model.completed` payloads, served in order, verbatim.
 * `source` names the recording in errors (`run 0192…`).
 */
export function recordedModel(
  payloads: readonly ModelOutput[],
  options: { name?: string; source?: string } = {},
): Model {
  let next = 0;
  const source = options.source ?? "the recording";
  return {
    name: options.name ?? "replay",
    complete() {
      const index = next++;
      if (index >= payloads.length) {
        return Promise.reject(
          new ModelError(
            `Cannot replay model call ${index + 1}: ${source} has only ${payloads.length} ` +
              "recorded model outputs",
            { hint: "the replay diverged from the recording: it asked the model more often" },
          ),
        );
      }
      return Promise.resolve(structuredClone(payloads[index]));
    },
  };
}
