/**
 * The A2A methods (spec 4.5, 7.3), named as in 1.0: each takes the request's params and the call
 * and returns an A2A object, or for the streaming methods the updates to send. dispatch.ts reads
 * the JSON-RPC envelope around them; nothing here knows about HTTP.
 */
import type { JsonValue } from "../json.js";
import { CANCELED } from "./bridge.js";
import { EventQueue } from "./event-queue.js";
import { ERR, RpcError } from "./jsonrpc.js";
import type { LiveTasks } from "./live.js";
import type { Start } from "./start.js";
import type { TaskBook } from "./tasks.js";
import { type CallContext, FINISHED, type TaskRecord, type WireObject } from "./types.js";
import { limitHistory, readMessage, readSendConfiguration, requestMessage, sendResult, statusUpdate, taskSnapshot, wireTask } from "./wire.js";

type Params = Record<string, JsonValue>;
type Unary = (params: Params, ctx: CallContext) => Promise<WireObject>;
type Streaming = (params: Params, ctx: CallContext) => Promise<AsyncIterable<WireObject>>;

export interface A2AHandler {
  readonly SendMessage: Unary;
  readonly GetTask: Unary;
  readonly ListTasks: Unary;
  readonly CancelTask: Unary;
  readonly SendStreamingMessage: Streaming;
  readonly SubscribeToTask: Streaming;
}

/** Ends the stream with the task's final state (or just ends it when the run could not start). */
function closeWith(queue: EventQueue, done: Promise<TaskRecord>, ctx: CallContext): void {
  void done.then(
    (final) => {
      queue.push(statusUpdate(final, ctx.version));
      queue.end();
    },
    () => queue.end(),
  );
}

function pageOf(p: Params): { size: number; offset: number } {
  const size = typeof p.pageSize === "number" && p.pageSize > 0 ? Math.min(100, Math.floor(p.pageSize)) : 50;
  const offset = typeof p.pageToken === "string" && /^\d+$/.test(p.pageToken) ? Number(p.pageToken) : 0;
  return { size, offset };
}

export function createHandler({ tasks, live, start }: { tasks: TaskBook; live: LiveTasks; start: Start }): A2AHandler {
  return {
    /**
     * Waits for the task's outcome, or with `returnImmediately` (0.3: `blocking: false`) answers
     * the task as it stands once its run has begun, the run going on. The answer's history is the
     * request's message, cut to `historyLength`.
     */
    async SendMessage(params, ctx) {
      const config = readSendConfiguration(params, ctx.version);
      const started = await start(params, ctx);
      const task = config.returnImmediately ? started.task : await started.done;
      const msg = readMessage(params);
      const history = limitHistory(msg ? [requestMessage(msg, task, ctx.version)] : [], config.historyLength);
      return sendResult(task, ctx.version, history);
    },

    async SendStreamingMessage(params, ctx) {
      const queue = new EventQueue();
      const started = await start(params, ctx, (event) => queue.push(event));
      // The snapshot leads even if the run's first pieces arrived while the task was being stored.
      queue.lead(taskSnapshot(started.task, ctx.version));
      closeWith(queue, started.done, ctx);
      return queue;
    },

    async GetTask(params, ctx) {
      return wireTask(await tasks.load(ctx.caller, params.id), ctx.version);
    },

    async ListTasks(params, ctx) {
      const { size, offset } = pageOf(params);
      const actor = ctx.caller.principal.actor?.id;
      const contextId = params.contextId;
      const found = await tasks.list({
        owner: ctx.caller.hash,
        ...(actor !== undefined ? { actor } : {}),
        ...(typeof contextId === "string" && contextId !== "" ? { context_id: contextId } : {}),
        limit: size + 1,
        offset,
      });
      return {
        tasks: found.slice(0, size).map((t) => wireTask(t, ctx.version)),
        nextPageToken: found.length > size ? String(offset + size) : "",
        pageSize: size,
      };
    },

    /** A task running on another replica cannot be reached from here (-32002, spec 4.5). */
    async CancelTask(params, ctx) {
      const t = await tasks.load(ctx.caller, params.id);
      if (FINISHED.has(t.state)) throw new RpcError(ERR.taskNotCancelable, "Task cannot be canceled");
      const entry = live.get(t.task_id);
      // A working task this process does not run may be starting its decision's run on another
      // replica (waiting for the thread): only that replica can stop it (see README).
      if (t.state === "working" && !entry) throw new RpcError(ERR.taskNotCancelable, "The task runs on another replica");
      if (entry) {
        entry.canceled = true;
        entry.run?.cancel();
      }
      const canceled = await tasks.update(t, CANCELED);
      // It finished first (its run ended, another replica settled it): it stays as it finished.
      if (canceled.state !== "canceled") throw new RpcError(ERR.taskNotCancelable, "Task cannot be canceled");
      return wireTask(canceled, ctx.version);
    },

    /** Only a run of this process can be followed (-32004 otherwise, spec 4.5). */
    async SubscribeToTask(params, ctx) {
      const t = await tasks.load(ctx.caller, params.id, true);
      if (FINISHED.has(t.state)) throw new RpcError(ERR.unsupportedOperation, "The task is in a terminal state");
      const entry = live.get(t.task_id);
      if (!entry) throw new RpcError(ERR.unsupportedOperation, "The task is not running in this process");
      const queue = new EventQueue();
      queue.push(taskSnapshot(t, ctx.version));
      entry.listeners.add((event) => queue.push(event));
      closeWith(queue, entry.done, ctx);
      return queue;
    },
  };
}
