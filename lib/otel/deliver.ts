// Sending trace requests: one request retried while the collector's answer allows it (capped
// exponential backoff with full jitter, its Retry-After when it gives one) inside a time budget,
// and the outbox entries sent the same way, each under its lock, removed once acknowledged. A
// trace goes as the requests splitRequest() (batch.ts) makes of it, in order, each retried alone;
// an entry notes after each acknowledged one how many went, so that the next delivery after a
// failure starts at the first one not acknowledged.
// Nothing here throws for what a collector or the network does; the outcome says what happened.
import { sleep } from "../core/clock.ts";
import { describeError } from "../core/errors.ts";
import { splitRequest, type TraceBody } from "./batch.ts";
import type { ExportTraceServiceRequest } from "./wire.ts";
import {
  listOtlpEntryIds,
  lockOtlpEntry,
  noteSentBatches,
  openOtlpRequests,
  type OtlpEntry,
  otlpRequestsIn,
  readOtlpEntry,
  removeOtlpEntry,
  writeOtlpEntry,
} from "./outbox.ts";
import type { ProxySettings } from "../net/mod.ts";
import type { DataRoot } from "../store/mod.ts";
import { type SendOutcome, sendTraces } from "./send.ts";
import type { OtlpTarget } from "./target.ts";

export interface SendPolicy {
  target: OtlpTarget;
  /** The environment's proxies (settings.proxy): loopback never goes through one. */
  proxy: ProxySettings;
  /** Tries in all, the first included. */
  attempts: number;
  /** The whole delivery, waits included, ends by then (epoch ms); null for no deadline. */
  deadlineMs: number | null;
  userAgent: string;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Told before each retry wait, for a progress line. */
  onRetry?: (reason: string, waitMs: number) => void;
  random?: () => number;
}

const encoder = new TextEncoder();

/** Sends `body`, retrying what may pass now, until accepted, refused, out of tries or of time. */
export async function sendWithRetry(body: Uint8Array, policy: SendPolicy): Promise<SendOutcome> {
  const base = policy.baseDelayMs ?? 250;
  const cap = policy.maxDelayMs ?? 30_000;
  const random = policy.random ?? Math.random;
  for (let attempt = 1;; attempt++) {
    const left = policy.deadlineMs === null ? null : policy.deadlineMs - Date.now();
    if (left !== null && left <= 0) {
      return { kind: "retry", status: null, reason: "out of time", retryAfterMs: null };
    }
    const outcome = await sendTraces(policy.target, body, {
      timeoutMs: left,
      proxy: policy.proxy,
      userAgent: policy.userAgent,
    });
    if (outcome.kind !== "retry" || attempt >= policy.attempts) return outcome;
    const waitMs = outcome.retryAfterMs ??
      Math.floor(random() * Math.min(cap, base * 2 ** (attempt - 1)));
    const remaining = policy.deadlineMs === null ? null : policy.deadlineMs - Date.now();
    if (waitMs > cap || (remaining !== null && waitMs >= remaining)) return outcome;
    policy.onRetry?.(outcome.reason, waitMs);
    await sleep(waitMs);
  }
}

export interface BatchesSent {
  /** All of them accepted (warnings and rejected spans summed), or why the first that failed did. */
  outcome: SendOutcome;
  /** Requests acknowledged in all, those before `from` included. */
  sent: number;
  total: number;
}

/**
 * Sends the requests `batches` from `from` on, in order, each with sendWithRetry(), stopping at the
 * first one not accepted (the rest are counted, not sent). `acknowledged` is told the count after each one accepted, before the next
 * is sent (the outbox writes it down there).
 */
export async function sendBatches(
  batches: Iterable<ExportTraceServiceRequest | Pick<TraceBody, "body">>,
  from: number,
  policy: SendPolicy,
  acknowledged: (sent: number) => void = () => {},
): Promise<BatchesSent> {
  let rejectedSpans = 0;
  const messages: string[] = [];
  let failed: SendOutcome | null = null;
  let sent = 0;
  let total = 0;
  // Made as they are taken (streamTraceRequests): each one is sent before the next is made. After
  // a failure the rest are only counted, for the message.
  for (const batch of batches) {
    const i = total++;
    if (i < from || failed !== null) continue;
    const body = "body" in batch ? batch.body : encoder.encode(JSON.stringify(batch));
    const outcome = await sendWithRetry(body, policy);
    if (outcome.kind !== "accepted") {
      failed = outcome;
      sent = i;
      continue;
    }
    rejectedSpans += outcome.rejectedSpans;
    if (outcome.message) messages.push(outcome.message);
    acknowledged(i + 1);
  }
  if (failed !== null) {
    const reason = total > 1
      ? `${failed.reason} (request ${sent + 1} of ${total}; ${sent} acknowledged)`
      : failed.reason;
    return { outcome: { ...failed, reason } as SendOutcome, sent, total };
  }
  return {
    outcome: { kind: "accepted", rejectedSpans, message: messages.join("; ") || null },
    sent: total,
    total,
  };
}

export type ExportState = "exported" | "pending" | "refused" | "busy" | "unreadable";

export interface ExportOutcome {
  /** The outbox id, or null for an export that was never kept. */
  id: string | null;
  runIds: string[];
  state: ExportState;
  spans: number;
  /** Spans the collector accepted the request without (a partial success). */
  rejectedSpans: number;
  /** Where it went or was meant to go. */
  url: string;
  /** Why it is pending, refused, busy or unreadable; the collector's warning on a partial one. */
  reason: string | null;
}

/** The outcome of a send, in an export's terms. */
export function exportOutcomeOf(
  outcome: SendOutcome,
  fields: { id: string | null; runIds: string[]; spans: number; url: string },
): ExportOutcome {
  switch (outcome.kind) {
    case "accepted":
      return {
        ...fields,
        state: "exported",
        rejectedSpans: outcome.rejectedSpans,
        reason: outcome.rejectedSpans > 0 || outcome.message
          ? `the collector ${
            outcome.rejectedSpans > 0 ? `rejected ${outcome.rejectedSpans} spans` : "warned"
          }${outcome.message ? `: ${outcome.message}` : ""}`
          : null,
      };
    case "retry":
    case "later":
      return { ...fields, state: "pending", rejectedSpans: 0, reason: outcome.reason };
    case "refused":
      return { ...fields, state: "refused", rejectedSpans: 0, reason: outcome.reason };
  }
}

/**
 * Sends one outbox entry to the policy's target, its requests from the first not yet
 * acknowledged, and removes it once all are accepted; otherwise records the attempt (and how many
 * went). `includeRefused` also tries an entry the collector refused before.
 */
export async function deliverOtlpEntry(
  root: DataRoot,
  id: string,
  policy: SendPolicy,
  options: { includeRefused?: boolean } = {},
): Promise<ExportOutcome> {
  const url = policy.target.url;
  const blank = (state: ExportState, reason: string): ExportOutcome => ({
    id,
    runIds: [],
    state,
    spans: 0,
    rejectedSpans: 0,
    url,
    reason,
  });
  using lock = lockOtlpEntry(root, id);
  const read = readOtlpEntry(root, id);
  if (lock === null) {
    const busy = "another reins process is sending it now";
    return read?.ok
      ? { ...blank("busy", busy), runIds: read.entry.runIds, spans: read.entry.spans }
      : blank("busy", busy);
  }
  // Sent by another process meanwhile: nothing left to do, nothing to warn about.
  if (read === null) return { ...blank("exported", ""), reason: null };
  if (!read.ok) return blank("unreadable", `outbox/otlp/${id}.json cannot be used: ${read.reason}`);
  const entry: OtlpEntry = read.entry;
  const fields = { id, runIds: entry.runIds, spans: entry.spans, url };
  if (entry.state === "refused" && !options.includeRefused) {
    return { ...fields, state: "refused", rejectedSpans: 0, reason: entry.lastError };
  }
  let sent: SendOutcome;
  // An entry of an older reins holds its trace as one request; a newer one's requests are read
  // from their file one at a time as they are sent.
  using file = entry.version === 1 ? null : openOtlpRequests(root, id);
  if (entry.version === 2 && file === null) {
    return blank("unreadable", `outbox/otlp/${id}.json cannot be used: its requests are missing`);
  }
  let batches: Iterable<ExportTraceServiceRequest | Pick<TraceBody, "body">>;
  let total: number;
  if (entry.version === 1) {
    const split = splitRequest(entry.request as unknown as ExportTraceServiceRequest);
    batches = split;
    total = split.length;
  } else {
    batches = otlpRequestsIn(file!);
    total = entry.batches;
  }
  try {
    // Each acknowledged request is written down before the next goes: a delivery that fails
    // part way, or a process that dies, leaves the entry to resume at the first one not sent.
    const result = await sendBatches(
      batches,
      Math.min(entry.sentBatches, total),
      policy,
      (n) => noteSentBatches(root, entry, n),
    );
    sent = result.outcome;
    if (result.total !== total) {
      return blank(
        "unreadable",
        `outbox/otlp/${id}.requests.jsonl cannot be used: it holds ${result.total} of its ` +
          `${total} requests`,
      );
    }
  } catch (error) {
    // A refused sandbox permission, say: keep the entry and say why.
    entry.attempts++;
    entry.lastError = describeError(error);
    writeOtlpEntry(root, entry);
    throw error;
  }
  const outcome = exportOutcomeOf(sent, fields);
  if (outcome.state === "exported") {
    removeOtlpEntry(root, id);
    return outcome;
  }
  entry.attempts++;
  entry.lastError = outcome.reason;
  entry.state = outcome.state === "refused" ? "refused" : "pending";
  writeOtlpEntry(root, entry);
  return outcome;
}

/**
 * Sends the entries of the outbox, oldest first; those the collector refused before only with
 * `includeRefused`.
 * Stops starting new ones once the policy's deadline has passed (and, with `stopOnFailure`, at
 * the first the collector did not take).
 */
export async function deliverPendingOtlp(
  root: DataRoot,
  policy: SendPolicy,
  options: { includeRefused?: boolean; skip?: ReadonlySet<string>; stopOnFailure?: boolean } = {},
): Promise<ExportOutcome[]> {
  const outcomes: ExportOutcome[] = [];
  for (const id of listOtlpEntryIds(root)) {
    if (options.skip?.has(id)) continue;
    if (policy.deadlineMs !== null && Date.now() >= policy.deadlineMs) break;
    if (!options.includeRefused) {
      const read = readOtlpEntry(root, id);
      if (read?.ok && read.entry.state === "refused") continue;
    }
    const outcome = await deliverOtlpEntry(root, id, policy, options);
    outcomes.push(outcome);
    // A collector that did not take one will not take the next one now either.
    if (options.stopOnFailure && outcome.state === "pending") break;
  }
  return outcomes;
}
