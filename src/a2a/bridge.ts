/**
 * A run inside a task, the bridge between runs/ and A2A: the run's answer streams to the task's
 * listeners as artifact updates, and its outcome is stored on the task when it ends. One piece of
 * the answer is held back, so the last one can be marked `lastChunk` (spec 4.5) when the run ends.
 */
import type { RunEvent } from "../agent/events.js";
import { outcomeCollector, type RunOutcome } from "../agent/outcome.js";
import { isRefusal } from "../errors.js";
import type { RunHandle } from "../runs/index.js";
import { A2A_CODE } from "./codes.js";
import type { A2AVersion } from "./jsonrpc.js";
import type { LiveTask, LiveTasks } from "./live.js";
import { taskFields } from "./task-fields.js";
import type { TaskBook } from "./tasks.js";
import type { Listener, TaskRecord } from "./types.js";
import { artifactUpdate } from "./wire.js";

/** A task at work: as it stands now, and its final state once the run has ended and it is stored. */
export interface Started {
  readonly task: TaskRecord;
  readonly done: Promise<TaskRecord>;
}

/** What a canceled task shows (as CancelTask stores it). */
export const CANCELED = { state: "canceled", status_parts: [], run_id: null } as const satisfies Partial<TaskRecord>;
const canceledTask = (task: TaskRecord): TaskRecord => ({ ...task, ...CANCELED });

/** A task that is already final (failed, refused, or left waiting without a run). */
export const settled = (task: TaskRecord): Started => ({ task, done: Promise.resolve(task) });

/** Starts the run with `emit`, or answers the task as it now stands when no run starts. */
export type Begin = (emit: (event: RunEvent) => void) => Promise<RunHandle | TaskRecord>;

export type RunInTask = (task: TaskRecord, version: A2AVersion, listener: Listener | undefined, begin: Begin) => Promise<Started>;

export function createRunBridge({ tasks, live, track }: { tasks: TaskBook; live: LiveTasks; track: <T>(work: Promise<T>) => Promise<T> }): RunInTask {
  /** After `begin`: a refusal fails the task; a run is tied to the task until it ends. */
  async function start(task: TaskRecord, version: A2AVersion, entry: LiveTask, begin: Begin): Promise<Started> {
    const answer = answerStream(task, version, entry.publish);
    const emit = (event: RunEvent) => {
      if (event.type === "message.start") entry.runId = event.run_id;
      answer.emit(event);
    };
    let run: RunHandle | TaskRecord;
    try {
      run = await begin(emit);
    } catch (error) {
      if (isRefusal(error)) return settled(await tasks.fail(task, A2A_CODE[error.code], error.message));
      throw error;
    }
    if ("task_id" in run) return settled(run);
    entry.run = run;
    // CancelTask came while the run was starting (the task is stored canceled): stop it now.
    if (entry.canceled) run.cancel();
    const withRun = entry.canceled ? canceledTask(task) : await tasks.update(task, { run_id: run.runId });
    const done = track(run.done.then(async () => {
      const outcome = answer.end();
      if (entry.canceled) return tasks.update(withRun, CANCELED);
      // A run that got as far as an answer or a pause carried any decided calls out first.
      const cut = outcome.ended === "error" || outcome.ended === "none";
      return (cut ? await tasks.waitAgain(withRun, run.runId) : undefined) ?? tasks.update(withRun, taskFields(outcome, answer.artifactId));
    }));
    return { task: withRun, done };
  }

  return async (task, version, listener, begin) => {
    const { entry, end } = live.open(task.task_id, listener);
    let started: Started;
    try {
      started = await start(task, version, entry, begin);
    } catch (error) {
      end(Promise.reject(error));
      throw error;
    }
    end(started.done);
    return { task: started.task, done: entry.done };
  };
}

/** The run's events as the task's `response` artifact, in chunks; `end` sends the held piece. */
function answerStream(task: TaskRecord, version: A2AVersion, publish: Listener) {
  const collector = outcomeCollector();
  const artifactId = `${task.task_id}-response`;
  let held: string | undefined;
  let chunks = 0;
  const chunk = (text: string, last: boolean) => {
    publish(artifactUpdate(task, version, { artifactId, name: "response", parts: [{ kind: "text", text }] }, chunks > 0, last));
    chunks++;
  };
  return {
    artifactId,
    emit(event: RunEvent): void {
      collector.observe(event);
      if (event.type === "message.delta") {
        if (held !== undefined) chunk(held, false);
        held = event.text;
      }
    },
    /** Marks the held piece as the last chunk; returns what the run came to. */
    end(): RunOutcome {
      const outcome = collector.outcome();
      if (held !== undefined) chunk(held, true);
      return outcome;
    },
  };
}
