/**
 * The A2A service (spec 2.5, 3.3, 4.5, 7.3), framework-free: `handle` takes a parsed request body
 * and the call and returns a JSON-RPC body or a stream of JSON-RPC bodies; `settle` gives waiting
 * tasks the outcome of a run another route resumed. Tasks wrap runs: `contextId` is the chat
 * thread, a gated run leaves the task input-required, and a decision sent as a data part resumes
 * it. This file only wires the parts; http/routes/a2a.ts binds `handle` to Hono.
 */
import type { RunOutcome } from "../agent/outcome.js";
import type { ApprovalRecord } from "../approvals/types.js";
import type { Clock } from "../clock.js";
import type { Ids } from "../ids.js";
import type { Runs } from "../runs/index.js";
import type { Settings } from "../settings/parse.js";
import type { Store } from "../store/ports.js";
import { createRunBridge } from "./bridge.js";
import { createDecisions } from "./decisions.js";
import { type A2AReply, dispatch } from "./dispatch.js";
import { createHandler } from "./handler.js";
import { createLiveTasks } from "./live.js";
import { createStart } from "./start.js";
import { createTaskBook } from "./tasks.js";
import type { CallContext } from "./types.js";

export { ORIGIN_EXTENSION_URI } from "./origin.js";
export type { A2AReply } from "./dispatch.js";

/** What the A2A service works with. */
export interface A2ADeps {
  readonly settings: Settings;
  readonly store: Store;
  readonly runs: Runs;
  readonly clock: Clock;
  readonly ids: Ids;
  /** Names this process on the tasks it runs (subscribe and cancel reach only its own runs). */
  readonly instanceId: string;
  /** Keeps the writes that store a task's final state once its run ended, for a closing app to wait on. */
  readonly track?: <T>(work: Promise<T>) => Promise<T>;
  /** Answers fit a response schema (stored as their JSON): a task read back from the store gets the data part too. */
  readonly structured?: boolean;
}

export function createA2AService(deps: A2ADeps) {
  const { settings, store, runs, ids } = deps;
  const tasks = createTaskBook(deps);
  const live = createLiveTasks();
  const runInTask = createRunBridge({ tasks, live, track: deps.track ?? ((work) => work) });
  const decide = createDecisions({ store, runs, tasks, runInTask });
  const start = createStart({ settings, ids, runs, tasks, runInTask, decide });
  const handler = createHandler({ tasks, live, start });
  return {
    handle: (body: unknown, ctx: CallContext): Promise<A2AReply> => dispatch(handler, body, ctx),
    /** After a resumed run ends, every waiting task of the requester on that thread takes the outcome. */
    settle: (approval: ApprovalRecord, outcome: RunOutcome): Promise<void> =>
      tasks.settle(approval, outcome, live.answering, outcome.runId === undefined ? undefined : live.taskOfRun(outcome.runId)),
    /** The settling sweep (tasks.ts settleStranded): tasks a run's end should have settled, not updated since `before`. */
    settleStranded: (before: string, limit: number): Promise<number> => tasks.settleStranded(before, limit),
  };
}

export type A2AService = ReturnType<typeof createA2AService>;
