// Matching a suite file's patterns against what the agent left, off the main thread. A pattern
// can backtrack for minutes (`^(a|a)*$` over forty a's and a '!') and nothing interrupts a
// match in progress, so each one runs in a Worker, which is terminated when its time is up or the
// suite stops: the scenario ends at its timeout, and signals are acted on while it matches. The
// worker is made from a blob URL of its few lines of source, so it needs no file to read (the
// sandbox, the bundle and the binary all run it alike), and idle workers are kept for the next
// match (starting one costs ~20 ms, a match in a warm one ~0.03 ms). A pattern that cannot
// backtrack far (patternWays: no repeat, no back reference, few alternatives) over texts short
// enough is matched here at once: each place it is tried at costs at most its ways × its length
// in steps, so the whole match at most INLINE_STEPS, well under a millisecond for the usual
// `sorry|apolog`-like pattern, and no worker — a thread and a JavaScript heap of its own — is
// started for it.

// Runs in the worker: one request, one answer (the index of the first text that matches, or -1).
const WORKER_SOURCE = `self.onmessage = (event) => {
  const { source, flags, texts } = event.data;
  const regex = new RegExp(source, flags);
  self.postMessage(texts.findIndex((text) => regex.test(text)));
};
`;

let workerUrl: string | null = null;

/**
 * The most pattern length × text length matched on the calling thread: a bounded pattern's match
 * costs at most that many steps (a few tens of milliseconds at the very worst).
 */
export const INLINE_STEPS = 8_000_000;

/**
 * How many ways a pattern (JavaScript syntax, the `u` flag) can try to match at one place, when
 * that is bounded — no repeat (`*`, `+`, `?`, `{`) and no back reference (`\\1`, `\\k<name>`):
 * each alternative (`|`) is one way more, and groups one after another multiply theirs
 * (`(a|b)(c|d)` has four). Each way reads at most one character per character of the pattern, so
 * a match costs at most ways × pattern × text steps. null: not bounded. An escaped character is
 * one atom; a `{` anywhere outside a class (`\\p{L}` too) counts as a repeat: a pattern this
 * cannot tell about goes to a worker, which is always safe.
 */
export function patternWays(source: string): number | null {
  // Per open group: the ways of its finished alternatives, and of the alternative being read.
  const groups: { done: number; current: number }[] = [{ done: 0, current: 1 }];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === "\\") {
      const next = source[i + 1];
      if (next === undefined) return null;
      if (!inClass && (next === "k" || (next >= "1" && next <= "9"))) return null;
      i++;
      continue;
    }
    if (inClass) {
      if (char === "]") inClass = false;
      continue;
    }
    const group = groups[groups.length - 1];
    switch (char) {
      case "[":
        inClass = true;
        break;
      case "(":
        groups.push({ done: 0, current: 1 });
        // A group's own syntax: (?: (?= (?! (?<= (?<! (?<name>; its `?` is no repeat.
        if (source[i + 1] === "?") {
          i++;
          if (source[i + 1] === "<" && source[i + 2] !== "=" && source[i + 2] !== "!") {
            const end = source.indexOf(">", i);
            if (end < 0) return null;
            i = end;
          } else {
            i++;
            if (source[i] === "<") i++;
          }
        }
        break;
      case ")": {
        if (groups.length === 1) return null;
        groups.pop();
        const outer = groups[groups.length - 1];
        outer.current *= group.done + group.current;
        if (outer.current > MAX_WAYS) return null;
        break;
      }
      case "|":
        group.done += group.current;
        group.current = 1;
        if (group.done > MAX_WAYS) return null;
        break;
      case "*":
      case "+":
      case "?":
      case "{":
        return null;
    }
  }
  if (inClass || groups.length !== 1) return null;
  const ways = groups[0].done + groups[0].current;
  return ways > MAX_WAYS ? null : ways;
}

/** The most ways (patternWays) a pattern matched on the calling thread may have. */
const MAX_WAYS = 4096;

const ways = new Map<string, number | null>();

/** patternWays, remembered: a suite's patterns are matched again and again. */
function waysOf(source: string): number | null {
  let known = ways.get(source);
  if (known === undefined) {
    known = patternWays(source);
    if (ways.size >= 1024) ways.clear();
    ways.set(source, known);
  }
  return known;
}

/** A match that did not end within its time: the pattern backtracks without end on this text. */
export class PatternTimeout extends Error {
  constructor(readonly pattern: string, readonly seconds: number) {
    super(
      `the pattern /${pattern}/ did not finish matching within ${seconds} s (it backtracks ` +
        "without end on this text: rewrite it without nested or overlapping repeats)",
    );
    this.name = "PatternTimeout";
  }
}

/** Workers that match patterns, as many at once as are asked for; terminated on dispose. */
export class PatternMatcher implements Disposable {
  readonly #idle: Worker[] = [];
  readonly #busy = new Set<Worker>();
  #started = 0;

  /** How many matches went to a worker (a pattern that could backtrack, or a long text). */
  get offThread(): number {
    return this.#started;
  }

  /**
   * The index of the first of `texts` that `regex` matches, or -1. Rejects with a PatternTimeout
   * after `timeoutSeconds`, and with the signal's reason when it is aborted.
   */
  firstMatch(
    regex: RegExp,
    texts: readonly string[],
    options: { timeoutSeconds: number; signal?: AbortSignal },
  ): Promise<number> {
    if (texts.length === 0) return Promise.resolve(-1);
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const bounded = waysOf(regex.source);
    if (bounded !== null) {
      let length = 0;
      for (const text of texts) length += text.length;
      if (bounded * Math.max(1, regex.source.length) * length <= INLINE_STEPS) {
        // A fresh RegExp: a `g` or `y` flag's lastIndex is not carried from one text to the next.
        const here = new RegExp(regex.source, regex.flags);
        return Promise.resolve(texts.findIndex((text) => here.test(text)));
      }
    }
    this.#started++;
    workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    const worker = this.#idle.pop() ?? new Worker(workerUrl, { type: "module" });
    this.#busy.add(worker);
    return new Promise<number>((resolve, reject) => {
      const finish = (keep: boolean, settle: () => void) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        worker.onmessage = null;
        worker.onerror = null;
        this.#busy.delete(worker);
        if (keep) this.#idle.push(worker);
        else worker.terminate();
        settle();
      };
      const timer = setTimeout(
        () => finish(false, () => reject(new PatternTimeout(regex.source, options.timeoutSeconds))),
        options.timeoutSeconds * 1000,
      );
      const onAbort = () => finish(false, () => reject(signal!.reason));
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.onmessage = (event: MessageEvent<number>) => finish(true, () => resolve(event.data));
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault();
        finish(false, () => reject(new Error(`The pattern worker failed: ${event.message}`)));
      };
      worker.postMessage({ source: regex.source, flags: regex.flags, texts });
    });
  }

  [Symbol.dispose](): void {
    for (const worker of [...this.#idle, ...this.#busy]) worker.terminate();
    this.#idle.length = 0;
    this.#busy.clear();
  }
}
