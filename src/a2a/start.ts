/**
 * The work a message asks for (SendMessage, SendStreamingMessage): a decision in a data part
 * resumes a run (decisions.ts); text starts a run on the context's thread, in a new task. Bad
 * text, or a contextId that is no thread id of this runtime, is -32602 before any task exists
 * (spec 7.3); continuing a task stays with the agent that created it (the person continues by
 * contextId).
 */
import { codePointLength, type JsonValue } from "../json.js";
import type { Runs } from "../runs/index.js";
import type { Settings } from "../settings/parse.js";
import type { Ids } from "../ids.js";
import { isThreadId, threadIdRule } from "../thread-ids.js";
import { type RunInTask, type Started, settled } from "./bridge.js";
import type { Decide } from "./decisions.js";
import { ERR, RpcError } from "./jsonrpc.js";
import { readOrigin } from "./origin.js";
import type { TaskBook } from "./tasks.js";
import { type CallContext, FINISHED, type Listener } from "./types.js";
import { type IncomingMessage, readMessage } from "./wire.js";

export interface StartDeps {
  readonly settings: Settings;
  readonly ids: Ids;
  readonly runs: Runs;
  readonly tasks: TaskBook;
  readonly runInTask: RunInTask;
  readonly decide: Decide;
}

export type Start = (params: Record<string, JsonValue>, ctx: CallContext, listener?: Listener) => Promise<Started>;

/** As on /chat (spec 4.1): 1 to MAX_MESSAGE_CHARS characters, spaces counting as any other. */
function checkText(msg: IncomingMessage, maxChars: number): void {
  if (msg.textParts === 0 || msg.emptyText) throw new RpcError(ERR.invalidParams, "Invalid params: the message needs text");
  if (codePointLength(msg.text) > maxChars) throw new RpcError(ERR.invalidParams, "Invalid params: the message is longer than MAX_MESSAGE_CHARS");
  if (!msg.text.isWellFormed()) throw new RpcError(ERR.invalidParams, "Invalid params: the message is not valid Unicode");
}

export function createStart({ settings, ids, runs, tasks, runInTask, decide }: StartDeps): Start {
  return async (params, ctx, listener) => {
    const msg = readMessage(params);
    if (!msg) throw new RpcError(ERR.invalidParams, "Invalid params: params.message with parts is required");
    // The context is the thread: an id the runtime's threads cannot have is refused before any
    // task or thread exists (under graph-server the server keys threads by UUID).
    if (msg.contextId !== undefined && !isThreadId(msg.contextId, settings.runtime))
      throw new RpcError(ERR.invalidParams, `Invalid params: contextId must be ${threadIdRule(settings.runtime)}`);
    const decision = msg.data.find((d) => typeof d.approval_id === "string");
    if (decision) return decide(msg, decision, ctx, listener);
    checkText(msg, settings.MAX_MESSAGE_CHARS);

    let contextId = msg.contextId;
    if (msg.taskId) {
      const existing = await tasks.load(ctx.caller, msg.taskId, true);
      if (FINISHED.has(existing.state)) throw new RpcError(ERR.unsupportedOperation, "The task is in a terminal state");
      contextId = existing.context_id;
    }
    const origin = readOrigin(ctx.caller, msg, settings);
    const task = await tasks.create(ctx.caller, contextId ?? ids.threadId());
    if (origin.tooDeep) return settled(await tasks.fail(task, "delegation_too_deep", "delegation chain too deep"));
    // The run frames a delegated request itself (caller note, mentioned words), from the origin.
    return runInTask(task, ctx.version, listener, (emit) =>
      runs.startTurn({ caller: ctx.caller, threadId: task.context_id, message: msg.text, metadata: {}, emit, logger: ctx.logger, origin: origin.text, span: ctx.span }),
    );
  };
}
