// The client of the gateway benchmark's streams, in a process of its own so that its reading
// costs the gateway's process nothing: it reads streamed answers from each URL given in turn
// (interleaved, `runs` rounds) and prints, as one JSON line, each answer's time to its first byte
// and to its end, and its size, by URL. With `--settle URL`, before each read (and after the last)
// it asks that URL and waits for its answer (the benchmark answers once the gateway has recorded every call begun,
// so that no read is timed while the gateway still records the one before).
//   deno run --allow-net=127.0.0.1 _stream_client.ts RUNS [--settle URL] URL…

const REQUEST = JSON.stringify({ model: "claude-bench", stream: true, messages: [] });

export interface Read {
  firstMs: number;
  totalMs: number;
  bytes: number;
}

async function readStream(url: string): Promise<Read> {
  const start = performance.now();
  const response = await fetch(url, { method: "POST", body: REQUEST });
  if (response.body === null) throw new Error(`${url} answered ${response.status} with no body`);
  const reader = response.body.getReader();
  let first = -1;
  let bytes = 0;
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    if (first < 0) first = performance.now() - start;
    bytes += next.value.length;
  }
  return { firstMs: first, totalMs: performance.now() - start, bytes };
}

if (import.meta.main) {
  const [runs, ...rest] = Deno.args;
  const settle = rest[0] === "--settle" ? rest[1] : null;
  const urls = settle === null ? rest : rest.slice(2);
  const reads: Read[][] = urls.map(() => []);
  for (let round = 0; round < Number(runs); round++) {
    for (let i = 0; i < urls.length; i++) {
      if (settle !== null) await (await fetch(settle)).arrayBuffer();
      reads[i].push(await readStream(urls[i]));
    }
  }
  // The last one recorded too, so that what the gateway's process spent on it is counted.
  if (settle !== null) await (await fetch(settle)).arrayBuffer();
  console.log(JSON.stringify(reads));
}
