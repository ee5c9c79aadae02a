// The streams of a task (SSE): the Task as it stood when the stream began, then the items of its
// subscription in order, to the end of the turn — or to its next pause for input, for a message
// stream — and a stream that fell too far behind ends with an error item saying so.
import { errorInfo, RPC, RpcError } from "./jsonrpc.ts";
import { INTERRUPTED_STATES, type StreamResponse, type Task, TERMINAL_STATES } from "./a2a/wire.ts";
import { endsStream, type Subscription } from "./live_task.ts";

/** What a stream is: `send` puts one item on the wire; `closed` aborts when the client left. */
export type StreamBody = (
  send: (item: StreamResponse) => Promise<void>,
  closed: AbortSignal,
) => Promise<void>;

export async function drainUntilEnd(
  subscription: Subscription,
  atInterrupted: boolean,
): Promise<void> {
  const first = subscription.first.status.state;
  if (TERMINAL_STATES.has(first) || (atInterrupted && first === "TASK_STATE_INPUT_REQUIRED")) {
    subscription.close();
    return;
  }
  while (true) {
    const item = await subscription.next();
    if (item === null || endsStream(item, atInterrupted)) break;
  }
  subscription.close();
}

/** A stream: the subscription's Task, then its items, to the end of the turn or its next pause. */
export function streamOf(
  subscription: Subscription,
  options: { closeAtInterrupted: boolean; closeAtFirst: boolean },
): StreamBody {
  return async (send, closed) => {
    try {
      await send({ task: subscription.first });
      const first = subscription.first.status.state;
      if (TERMINAL_STATES.has(first)) return;
      if (options.closeAtFirst && INTERRUPTED_STATES.has(first)) return;
      while (!closed.aborted) {
        const item = await subscription.next(closed);
        if (item === null) {
          if (subscription.overflowed) {
            throw new RpcError(
              RPC.internalError,
              "This stream fell too far behind the task and was closed: SubscribeToTask again, or GetTask",
              [errorInfo("STREAM_TOO_FAR_BEHIND")],
            );
          }
          return;
        }
        await send(item);
        if (endsStream(item, options.closeAtInterrupted)) return;
      }
    } finally {
      subscription.close();
    }
  };
}

export function finalStream(task: Task): { stream: StreamBody } {
  return { stream: async (send) => await send({ task }) };
}
