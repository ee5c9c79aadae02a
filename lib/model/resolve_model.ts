// `--model SPEC` to a Model: absent or `demo` → the built-in demo model, `mock:FILE`,
// `replay:RUN` (through a loader the caller gives, since only it knows the run store) and
// `openai:MODEL`. A spec it cannot use is a UsageError before anything runs.
import type { Settings } from "../core/mod.ts";
import { UsageError } from "../core/errors.ts";
import { resolvePath } from "../core/paths.ts";
import { DEMO_MODEL_NAME, demoModel } from "./demo_model.ts";
import { mockModel, recordedModel } from "./mock_model.ts";
import type { Model, ModelOutput } from "./model.ts";
import { openaiModel } from "./openai_model.ts";
import type { RetryPolicy } from "../net/mod.ts";

export interface ResolveModelOptions {
  settings: Pick<Settings, "openai" | "proxy">;
  /** `--base-url`: overrides settings.openai.baseUrl (OPENAI_BASE_URL). */
  baseUrl?: string | null;
  /** Where a relative `mock:FILE` is found (default: the process's working directory). */
  baseDir?: string;
  /** The recorded `model.completed` payloads of a run (`replay:RUN`), oldest first. */
  loadRecording?: (run: string) => Promise<readonly ModelOutput[]>;
  retry?: Partial<RetryPolicy>;
}

export const MODEL_SPECS = "mock:FILE, replay:RUN, openai:MODEL or demo";

export async function resolveModel(
  spec: string | null,
  options: ResolveModelOptions,
): Promise<Model> {
  if (spec === null || spec === "" || spec === DEMO_MODEL_NAME) return demoModel();
  const colon = spec.indexOf(":");
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const rest = colon < 0 ? "" : spec.slice(colon + 1);
  if (colon >= 0 && rest === "") {
    throw new UsageError(
      `Cannot use the model ${JSON.stringify(spec)}: nothing follows "${kind}:"`,
      {
        hint: `--model takes ${MODEL_SPECS}`,
      },
    );
  }
  switch (kind) {
    case "mock":
      return await mockModel(resolvePath(rest, options.baseDir));
    case "replay": {
      if (!options.loadRecording) {
        throw new UsageError(`Cannot use the model ${JSON.stringify(spec)} here`, {
          hint: "replay a run with `reins replay RUN`",
        });
      }
      const payloads = await options.loadRecording(rest);
      return recordedModel(payloads, { name: spec, source: `run ${rest}` });
    }
    case "openai":
      return openaiModel({
        model: rest,
        baseUrl: validBaseUrl(options.baseUrl ?? options.settings.openai.baseUrl),
        apiKey: options.settings.openai.apiKey,
        proxy: options.settings.proxy,
        retry: options.retry,
      });
    default:
      throw new UsageError(`Cannot use the model ${JSON.stringify(spec)}: unknown kind`, {
        hint: `--model takes ${MODEL_SPECS}`,
      });
  }
}

/**
 * Checks `--model SPEC` before a run is recorded (reads a mock script, checks a base URL) and
 * throws a UsageError for a spec the loop could not use. Makes no request to any endpoint.
 */
export async function checkModelSpec(
  spec: string | null,
  settings: Pick<Settings, "openai" | "proxy">,
  options: Omit<ResolveModelOptions, "settings"> = {},
): Promise<void> {
  await resolveModel(spec, { ...options, settings });
}

function validBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`Cannot use the base URL ${JSON.stringify(value)}: it is not a URL`, {
      hint: "pass --base-url http(s)://HOST[:PORT]/v1",
    });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`Cannot use the base URL ${JSON.stringify(value)}: it is not http(s)`, {
      hint: "pass --base-url http(s)://HOST[:PORT]/v1",
    });
  }
  return value.replace(/\/+$/, "");
}
