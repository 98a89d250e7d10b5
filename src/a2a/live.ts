/**
 * The tasks whose runs this process answers, by task id. Cancel and subscribe reach a run only
 * here: another replica's run is refused (spec 4.5), since its events never pass this process.
 *
 * An entry's `done` is made together with the entry. A subscriber may come at any moment after
 * the task is stored, including before the run has started (while the thread is claimed); made
 * later, `done` would leave such a subscriber nothing to wait on, and its stream would never end.
 */
import type { RunHandle } from "../runs/index.js";
import type { Listener, TaskRecord, WireObject } from "./types.js";

export interface LiveTask {
  /** Set once the run has started. */
  run: RunHandle | undefined;
  /** The run's id, from its first event: known before `run` is (a short run may end first). */
  runId: string | undefined;
  /** CancelTask came: a run still starting is stopped as it starts; the run's end stores the task canceled. */
  canceled: boolean;
  readonly listeners: Set<Listener>;
  /**
   * Resolves with the stored final task; rejects when the run could not start (whoever started
   * it has the error).
   */
  readonly done: Promise<TaskRecord>;
  /** Sends an update to every listener. */
  publish(event: WireObject): void;
}

export interface LiveTasks {
  /**
   * Registers a task. `end` hands over the task's final state: once it settles, the entry leaves
   * the registry and `done` settles with it.
   */
  open(taskId: string, listener?: Listener): { readonly entry: LiveTask; end(final: Promise<TaskRecord>): void };
  get(taskId: string): LiveTask | undefined;
  has(taskId: string): boolean;
  /**
   * A run of this process answers the task (it started, or sent its first event): another run's
   * outcome is not the task's. A task still waiting for its decision's run to start is not.
   */
  answering(taskId: string): boolean;
  /** The live task whose run is `runId` (where a resumed run continued), if any. */
  taskOfRun(runId: string): string | undefined;
}

export function createLiveTasks(): LiveTasks {
  const live = new Map<string, LiveTask>();
  return {
    open(taskId, listener) {
      let resolve!: (task: TaskRecord) => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<TaskRecord>((res, rej) => ((resolve = res), (reject = rej)));
      // Nobody need listen to a run that could not start: its starter already has the error.
      void done.catch(() => {});
      const listeners = new Set<Listener>(listener ? [listener] : []);
      const entry: LiveTask = { run: undefined, runId: undefined, canceled: false, listeners, done, publish: (event) => listeners.forEach((l) => l(event)) };
      live.set(taskId, entry);
      const end = (final: Promise<TaskRecord>) => {
        void final.then(
          (task) => {
            live.delete(taskId);
            resolve(task);
          },
          (error: unknown) => {
            live.delete(taskId);
            reject(error);
          },
        );
      };
      return { entry, end };
    },
    get: (taskId) => live.get(taskId),
    has: (taskId) => live.has(taskId),
    answering(taskId) {
      const entry = live.get(taskId);
      return entry !== undefined && (entry.run !== undefined || entry.runId !== undefined);
    },
    taskOfRun(runId) {
      for (const [taskId, entry] of live) if (entry.runId === runId || entry.run?.runId === runId) return taskId;
      return undefined;
    },
  };
}
