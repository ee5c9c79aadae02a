// Matching a suite file's patterns against what the agent left, off the main thread. A pattern
// can backtrack for minutes (`^(a|a)*$` over forty a's and a '!') and nothing interrupts a
// match in progress, so each one runs in a Worker, which is terminated when its time is up or the
// suite stops: the scenario ends at its timeout, and signals are acted on while it matches. The
// worker is made from a blob URL of its few lines of source, so it needs no file to read (the
// sandbox, the bundle and the binary all run it alike), and idle workers are kept for the next
// match (starting one costs ~20 ms, a match in a warm one ~0.03 ms).

// Runs in the worker: one request, one answer (the index of the first text that matches, or -1).
const WORKER_SOURCE = `self.onmessage = (event) => {
  const { source, flags, texts } = event.data;
  const regex = new RegExp(source, flags);
  self.postMessage(texts.findIndex((text) => regex.test(text)));
};
`;

let workerUrl: string | null = null;

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
