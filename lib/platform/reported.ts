// platform.json (0600, at the data root): where reports went. Per platform and test name, the
// run test and the scenarios it has, so reporting under the same name again joins that test with
// a new execution; per run, every call it was reported as. Read rather than held in memory: the
// next report may come from another process. Updates take a lock, so two reporters cannot lose
// each other's entries.
import { z } from "zod";
import { type DataRoot, UntrustedFileError } from "../store/data_root.ts";

export const PLATFORM_FILE_TYPE = "reins.platform";

const RememberedTest = z.object({
  base_url: z.string(),
  /** Older files have none: their tests were all provisioned as text. */
  modality: z.string().default("text"),
  name: z.string(),
  run_test_id: z.string(),
  scenario_keys: z.array(z.string()),
  test_execution_id: z.string().nullable(),
  url: z.string(),
  updated_ms: z.number().int(),
});
export type RememberedTest = z.infer<typeof RememberedTest>;

const RememberedCall = z.object({
  base_url: z.string(),
  workspace_id: z.string().nullable().default(null),
  name: z.string(),
  run_test_id: z.string(),
  test_execution_id: z.string(),
  call_execution_id: z.string(),
  url: z.string(),
  reported_ms: z.number().int(),
});
export type RememberedCall = z.infer<typeof RememberedCall>;

export const PlatformFile = z.object({
  type: z.literal(PLATFORM_FILE_TYPE),
  tests: z.array(RememberedTest),
  runs: z.record(z.string(), z.array(RememberedCall)),
});
export type PlatformFile = z.infer<typeof PlatformFile>;

function empty(): PlatformFile {
  return { type: PLATFORM_FILE_TYPE, tests: [], runs: {} };
}

function parse(text: string): PlatformFile | null {
  try {
    const parsed = PlatformFile.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** platform.json, or an empty record when it is missing, unreadable or not ours. */
export function readReported(root: DataRoot): PlatformFile {
  const text = readTrusted(root, root.layout.platformFile());
  return (text === null || text === UNTRUSTED ? null : parse(text)) ?? empty();
}

const UNTRUSTED = Symbol("untrusted");

/** The file's text, null when missing, UNTRUSTED when someone else could have written it. */
function readTrusted(root: DataRoot, path: string): string | null | typeof UNTRUSTED {
  try {
    return root.readText(path);
  } catch (error) {
    if (error instanceof UntrustedFileError) return UNTRUSTED;
    throw error;
  }
}

/** Runs `fn` holding platform.json's lock (a sibling lock file; the OS drops it if we die). */
export function withPlatformLock<T>(root: DataRoot, fn: () => T): T {
  using _lock = root.lock(root.layout.platformLock());
  return fn();
}

function update(root: DataRoot, change: (file: PlatformFile) => void): void {
  withPlatformLock(root, () => {
    const path = root.layout.platformFile();
    const text = readTrusted(root, path);
    if (text === UNTRUSTED) {
      // Never used, never overwritten unseen: kept aside for a person (reins doctor lists it).
      Deno.renameSync(path, `${path}.untrusted`);
    }
    let file = text === null || text === UNTRUSTED ? empty() : parse(text);
    if (file === null) {
      // A damaged or foreign file is kept aside for a person to look at, not overwritten.
      root.writeFileAtomic(`${path}.unreadable`, text as string);
      file = empty();
    }
    change(file);
    root.writeFileAtomic(path, `${JSON.stringify(file, null, 2)}\n`);
  });
}

/** The test remembered for this platform and name, if any. */
export function rememberedTest(
  root: DataRoot,
  baseUrl: string,
  name: string,
): RememberedTest | null {
  return readReported(root).tests.find((t) => t.base_url === baseUrl && t.name === name) ?? null;
}

export interface TestToRemember {
  base_url: string;
  modality: string;
  name: string;
  run_test_id: string;
  scenario_keys: string[];
  test_execution_id: string | null;
  url: string;
}

function putTest(file: PlatformFile, test: TestToRemember): void {
  const at = file.tests.findIndex((t) => t.base_url === test.base_url && t.name === test.name);
  const previous = at >= 0 ? file.tests[at] : null;
  const next: RememberedTest = {
    ...test,
    scenario_keys: previous?.run_test_id === test.run_test_id
      ? [...new Set([...previous.scenario_keys, ...test.scenario_keys])]
      : test.scenario_keys,
    test_execution_id: test.test_execution_id ?? previous?.test_execution_id ?? null,
    updated_ms: Date.now(),
  };
  if (at >= 0) file.tests[at] = next;
  else file.tests.push(next);
}

function putCalls(file: PlatformFile, runs: Record<string, RememberedCall>): void {
  for (const [runId, call] of Object.entries(runs)) {
    const list = file.runs[runId] ?? [];
    if (!list.some((c) => c.call_execution_id === call.call_execution_id)) list.push(call);
    file.runs[runId] = list;
  }
}

/** Remembers a finished report in one write: its test, and where each run went. */
export function rememberReport(
  root: DataRoot,
  report: { test: TestToRemember; runs: Record<string, RememberedCall> },
): void {
  update(root, (file) => {
    putTest(file, report.test);
    putCalls(file, report.runs);
  });
}

/**
 * Where `runId` was reported on this platform (and workspace), oldest first: one entry per
 * execution it is part of. Empty when it never was.
 */
export function reportedCalls(
  root: DataRoot,
  runId: string,
  where: { baseUrl: string; workspaceId: string | null },
): RememberedCall[] {
  return (readReported(root).runs[runId] ?? []).filter((call) =>
    call.base_url === where.baseUrl && call.workspace_id === where.workspaceId
  );
}

/** Forgets a test the platform no longer knows (it answered 404 for it). */
export function forgetTest(
  root: DataRoot,
  baseUrl: string,
  name: string,
  runTestId: string,
): void {
  update(root, (file) => {
    file.tests = file.tests.filter((t) =>
      !(t.base_url === baseUrl && t.name === name && t.run_test_id === runTestId)
    );
  });
}
