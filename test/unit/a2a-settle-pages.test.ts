/**
 * The settling sweep reads stranded tasks a page at a time: tasks it must leave waiting (their run
 * ended only just now, its own end may still be writing them) do not hide newer ones it can settle;
 * and it counts the tasks it wrote.
 */
import { describe, expect, it } from "vitest";
import { createTaskBook } from "../../src/a2a/tasks.js";
import { isoTime } from "../../src/clock.js";
import { randomIds } from "../../src/ids.js";
import type { RunRecord } from "../../src/store/ports.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { TaskRecord } from "../../src/store/records/task.js";
import { runRecord } from "../support/records.js";

const T0 = Date.parse("2026-11-29T12:00:00Z");
const at = (s: number) => isoTime(T0 + s * 1000);

const run = (id: string, endedAt: number): RunRecord => runRecord(id, "t", at(0), { status: "ok", updated_at: at(endedAt), ended_at: at(endedAt), latency_ms: 1 });

const task = (id: string, runId: string, updatedAt: number): TaskRecord => ({
  task_id: id,
  context_id: "t",
  owner: "owner",
  actor: null,
  state: "working",
  status_parts: [],
  artifacts: [],
  approval_ids: [],
  run_id: runId,
  instance_id: null,
  created_at: at(0),
  updated_at: at(updatedAt),
});

describe("the settling sweep's pages", () => {
  it("settles a task behind more than a page of tasks it must leave for now", async () => {
    const store = createMemoryStore();
    await store.createThread({ thread_id: "t", owner: "owner", actor: null, created_at: at(0), updated_at: at(0) });
    // 250 tasks written at 1..250 s whose runs ended at 990 s: too recent for a sweep at 1000 s
    // looking for stillness since 960 s. Then one written at 300 s whose run ended at 310 s.
    for (let i = 1; i <= 250; i++) {
      await store.createRun(run(`recent-${i}`, 990));
      await store.createTask(task(`waits-${String(i).padStart(3, "0")}`, `recent-${i}`, i));
    }
    await store.createRun(run("long-ago", 310));
    await store.createTask(task("settle-me", "long-ago", 300));
    const book = createTaskBook({ store, clock: { now: () => T0 + 1_000_000 }, ids: randomIds, instanceId: "i" });

    expect(await book.settleStranded(at(960), 100)).toBe(1);
    expect((await store.getTask("settle-me"))!.state).toBe("completed");
    expect((await store.getTask("waits-001"))!.state).toBe("working");
    expect((await store.getTask("waits-250"))!.state).toBe("working");
    expect(await book.settleStranded(at(960), 100)).toBe(0);
  });

  it("a pass goes on from where the last one stopped: 1,250 tasks to leave ahead of one to settle take two passes, not forever", async () => {
    const store = createMemoryStore();
    await store.createThread({ thread_id: "t", owner: "owner", actor: null, created_at: at(0), updated_at: at(0) });
    for (let i = 1; i <= 1_250; i++) {
      await store.createRun(run(`recent-${i}`, 990));
      await store.createTask(task(`waits-${String(i).padStart(4, "0")}`, `recent-${i}`, i / 10));
    }
    await store.createRun(run("long-ago", 310));
    await store.createTask(task("settle-me", "long-ago", 300));
    const book = createTaskBook({ store, clock: { now: () => T0 + 1_000_000 }, ids: randomIds, instanceId: "i" });

    expect(await book.settleStranded(at(960), 100)).toBe(0);
    expect(await book.settleStranded(at(960), 100)).toBe(1);
    expect((await store.getTask("settle-me"))!.state).toBe("completed");
    // Back to the oldest: a task written meanwhile among the first ones is read on the next pass.
    await store.createRun(run("also-long-ago", 310));
    await store.createTask(task("settle-me-too", "also-long-ago", 0.05));
    expect(await book.settleStranded(at(960), 100)).toBe(1);
  });

  it("counts only what it wrote: a task another writer updated after the sweep read it is not settled", async () => {
    const inner = createMemoryStore();
    await inner.createThread({ thread_id: "t", owner: "owner", actor: null, created_at: at(0), updated_at: at(0) });
    await inner.createRun(run("long-ago", 310));
    await inner.createTask(task("touched", "long-ago", 300));
    const store = {
      ...inner,
      strandedTasks: async (...args: Parameters<typeof inner.strandedTasks>) => {
        const found = await inner.strandedTasks(...args);
        await inner.updateTask("touched", { status_parts: [{ kind: "text", text: "another writer" }], updated_at: at(301) });
        return found;
      },
    };
    const book = createTaskBook({ store, clock: { now: () => T0 + 1_000_000 }, ids: randomIds, instanceId: "i" });
    expect(await book.settleStranded(at(960), 100)).toBe(0);
    expect((await inner.getTask("touched"))!.state).toBe("working");
  });
});
