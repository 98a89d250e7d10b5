/** The registry of tasks this process answers (src/a2a/live.ts): which of them another run's end may settle. */
import { describe, expect, it } from "vitest";
import { createLiveTasks } from "../../src/a2a/live.js";
import type { TaskRecord } from "../../src/a2a/types.js";

describe("live tasks", () => {
  it("a task is answered by a run of this process once the run sent its first event; before that (a decision waiting for the conversation) another run's end may settle it", async () => {
    const live = createLiveTasks();
    const { entry, end } = live.open("t1");
    expect(live.has("t1")).toBe(true);
    expect(live.answering("t1")).toBe(false);
    entry.runId = "run-1";
    expect(live.answering("t1")).toBe(true);
    expect(live.taskOfRun("run-1")).toBe("t1");
    end(Promise.resolve({ task_id: "t1" } as TaskRecord));
    await entry.done;
    expect(live.has("t1")).toBe(false);
    expect(live.answering("t1")).toBe(false);
    expect(live.answering("unknown")).toBe(false);
  });
});
