// Upstreams served by this process itself (a replay's recording, replay_server.ts): the gateway
// hands a call for one straight to its handler, as the Request it would have sent, instead of
// sending it over a loopback connection to a server of the same process and reading it back
// there. What the handler answers is passed on and recorded as an answer over the wire is.
// Only what this process registered is found here: a URL naming another process's port is not.

export type LocalHandler = (request: Request) => Promise<Response>;

const handlers = new Map<string, LocalHandler>();

/** Serves `origin` (`http://127.0.0.1:PORT`) by `handler` until the returned function is called. */
export function serveLocally(origin: string, handler: LocalHandler): () => void {
  handlers.set(origin, handler);
  return () => {
    if (handlers.get(origin) === handler) handlers.delete(origin);
  };
}

/** The handler of this process serving `url`'s origin, if any. */
export function localHandler(url: URL): LocalHandler | undefined {
  return handlers.size === 0 ? undefined : handlers.get(url.origin);
}
