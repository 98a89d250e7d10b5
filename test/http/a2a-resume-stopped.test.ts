/**
 * A2A tasks waiting on a decision whose resumed run stopped before it carried the decided call out
 * (the client left, the replica closed): the decision stays due, the tasks are not failed, and
 * they take the outcome of the run that carries it out later (the sweep's). The call is sent once.
 *
 * The PostgreSQL case needs the PostgreSQL at 127.0.0.1:5432 (user postgres, database test), or
 * TEST_SQLDB_DSN; its schema is dropped in afterAll.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defineTool } from "../../src/index.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { KEY, makeApp, post, readUntil, type TestApp, waitFor } from "../helpers.js";
import { orderAfter, ordersPolicy } from "../support/orders.js";
import { scratchDatabase, TEST_DSN as DSN } from "../support/postgres.js";
import { recordingUpstream } from "../support/upstream.js";

type Json = Record<string, any>;
const upstream = recordingUpstream();
const pg = scratchDatabase();
afterAll(() => pg.cleanup());

/** create_order after 600 ms of the tool's own work (it stops when the run stops). */
const slowOrder = orderAfter(600, true);
const GATED = '/call create_order {"item":"book"}';
const options = { policyText: ordersPolicy({ timeoutS: 60 }), tools: [slowOrder] };

let n = 0;
async function rpc(a: TestApp, method: string, params: Json): Promise<Json> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++n, method, params });
  const res = await a.fetch(new Request("http://test/a2a/app", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" }, body }));
  expect(res.status).toBe(200);
  const json = (await res.json()) as Json;
  expect(json.error).toBeUndefined();
  return json.result;
}
const message = (parts: Json[], extra: Json = {}) => ({ message: { messageId: `m-${++n}`, role: "ROLE_USER", parts, ...extra } });
const statusData = (t: Json) => (t.status.message?.parts ?? []).filter((p: Json) => p.data !== undefined).map((p: Json) => p.data);
const stateOf = async (a: TestApp, id: string) => ((await rpc(a, "GetTask", { id })) as Json).status.state as string;

/** A task whose run waits for the approval of one create_order call: the task and that approval. */
async function waitingTask(a: TestApp): Promise<{ task: Json; approval: Json }> {
  const task = (await rpc(a, "SendMessage", message([{ text: GATED }]))).task as Json;
  expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  return { task, approval: statusData(task).find((d: Json) => d.type === "approval_request").approval };
}

/** The task completes with the order's answer, and the call went out once. */
async function expectCompletedOnce(a: TestApp, task: Json, approval: Json): Promise<void> {
  await waitFor(async () => (await stateOf(a, task.id)) === "TASK_STATE_COMPLETED", 10_000);
  const final = (await rpc(a, "GetTask", { id: task.id })) as Json;
  expect(JSON.stringify(final.artifacts)).toContain("created");
  expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(1);
}

describe("a resumed run that stopped before it carried the decision out", () => {
  it("approved in the web page, whose client left at once: the waiting task is not failed, and completes once the sweep's run sends the call", async () => {
    const a = await makeApp({ ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" }, { ...options, sweepIntervalMs: 300 });
    try {
      const { task, approval } = await waitingTask(a);
      const res = await a.fetch(post(`/threads/${task.contextId}/approvals/${approval.approval_id}`, { decision: "approve", digest: approval.digest }));
      const { reader } = await readUntil(res, (events) => events.some((e) => e.event === "message.start"));
      await reader.cancel();
      await new Promise((r) => setTimeout(r, 200));
      expect(await stateOf(a, task.id)).not.toBe("TASK_STATE_FAILED");
      await expectCompletedOnce(a, task, approval);
    } finally {
      await a.close();
    }
  });

  it("decided over A2A on a replica that closes while the tool works: the task is not failed, and completes once the other replica's sweep carries the decision out", async () => {
    const schema = pg.fresh();
    const env = { CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" };
    const timings = { leaseTimings: { renewMs: 200, ttlMs: 1_000 } };
    const x = await makeApp(env, { ...options, ...timings, sqlSchema: schema, sweepIntervalMs: 60_000 });
    const y = await pg.track(makeApp(env, { ...options, ...timings, sqlSchema: schema, sweepIntervalMs: 300 }));
    const { task, approval } = await waitingTask(x);
    const decided = (await rpc(x, "SendMessage", { ...message([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { taskId: task.id }), configuration: { returnImmediately: true } })).task as Json;
    expect(decided.status.state).toBe("TASK_STATE_WORKING");
    await new Promise((r) => setTimeout(r, 150));
    await x.close();
    expect(await stateOf(y, task.id)).not.toBe("TASK_STATE_FAILED");
    await expectCompletedOnce(y, task, approval);
  }, 30_000);

  it("a decision that can never be carried out (every resume fails before the call): the waiting task fails once the run is given up, not at the first try nor never", async () => {
    let broken = false;
    const inner = createMemoryStore();
    const gone = () => Promise.reject(new Error("disk gone"));
    const store = { ...inner, getMessages: (id: string) => (broken ? gone() : inner.getMessages(id)), getMessagePage: (id: string, page: Parameters<typeof inner.getMessagePage>[1]) => (broken ? gone() : inner.getMessagePage(id, page)) };
    const a = await makeApp({ ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" }, { ...options, storage: async (_s, { clock }) => ({ store, lease: createMemoryLease(clock) }), sweepIntervalMs: 50 });
    try {
      const { task, approval } = await waitingTask(a);
      broken = true;
      await (await a.fetch(post(`/threads/${task.contextId}/approvals/${approval.approval_id}`, { decision: "approve", digest: approval.digest }))).text();
      await waitFor(async () => (await inner.listRuns(task.contextId)).filter((r) => r.resumed_from !== null).length >= 3, 5_000);
      broken = false;
      await waitFor(async () => (await stateOf(a, task.id)) === "TASK_STATE_FAILED", 5_000);
      expect(a.logs.filter((l) => /failed to resume too often/.test(String(l.message)))).toHaveLength(1);
      expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(0);
    } finally {
      await a.close();
    }
  });
});

describe("canceling a task whose decision is on its way", () => {
  it("another replica refuses to cancel a task whose decision's run this replica is still starting (waiting for the thread): the task is not left canceled while its run goes on", async () => {
    const schema = pg.fresh();
    const env = { CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" };
    const quick = { ...options, leaseTimings: { renewMs: 200, ttlMs: 1_000 }, sweepIntervalMs: 60_000, sqlSchema: schema };
    const x = await pg.track(makeApp(env, quick));
    const y = await pg.track(makeApp(env, quick));
    const h = await pg.handle(schema);
    const { task, approval } = await waitingTask(x);
    const held = (await h.lease.acquire(task.contextId, "other:run", 10_000))!;
    const decided = rpc(x, "SendMessage", message([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { taskId: task.id }));
    await new Promise((r) => setTimeout(r, 400));
    const body = JSON.stringify({ jsonrpc: "2.0", id: "c", method: "CancelTask", params: { id: task.id } });
    const res = await y.fetch(new Request("http://test/a2a/app", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" }, body }));
    expect(((await res.json()) as Json).error).toMatchObject({ code: -32002 });
    await h.lease.release(held);
    await decided;
    await expectCompletedOnce(y, task, approval);
  }, 30_000);
});

describe("a decision and a cancel on the same task at once", () => {
  it("a decision on a task canceled while the decision was being checked is refused (-32004): nothing is recorded or sent", async () => {
    const inner = createMemoryStore();
    let meanwhile: (() => Promise<unknown>) | undefined;
    // The decision reads the approval's thread after the task; the cancel lands right then.
    const store = { ...inner, getThread: async (id: string) => {
      const run = meanwhile;
      meanwhile = undefined;
      await run?.();
      return inner.getThread(id);
    } };
    const a = await makeApp({ ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" }, { ...options, storage: async (_s, { clock }) => ({ store, lease: createMemoryLease(clock) }) });
    try {
      const { task, approval } = await waitingTask(a);
      meanwhile = () => rpc(a, "CancelTask", { id: task.id });
      const body = JSON.stringify({ jsonrpc: "2.0", id: "d", method: "SendMessage", params: message([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { taskId: task.id }) });
      const res = await a.fetch(new Request("http://test/a2a/app", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" }, body }));
      expect(((await res.json()) as Json).error).toMatchObject({ code: -32004 });
      expect(meanwhile).toBeUndefined();
      expect((await inner.getApproval(approval.approval_id))!.status).toBe("pending");
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_CANCELED");
      await new Promise((r) => setTimeout(r, 300));
      expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(0);
    } finally {
      await a.close();
    }
  });
});

describe("the settling sweep", () => {
  /**
   * An app on a fake clock whose store refuses task writes while `tasks.broken`, and runs
   * `tasks.afterStranded` once the sweep has read its tasks; no interval jobs.
   */
  async function flakyTaskWrites(tools = options.tools, extra: { responseSchema?: Json } = {}) {
    const clock = { t: Date.parse("2026-11-29T12:00:00Z"), now: () => clock.t };
    const tasks: { broken: boolean; afterStranded?: () => Promise<unknown> } = { broken: false };
    const inner = createMemoryStore();
    const store = {
      ...inner,
      updateTask: (...args: Parameters<typeof inner.updateTask>) => (tasks.broken ? Promise.reject(new Error("disk gone")) : inner.updateTask(...args)),
      strandedTasks: async (...args: Parameters<typeof inner.strandedTasks>) => {
        const found = await inner.strandedTasks(...args);
        await tasks.afterStranded?.();
        return found;
      },
    };
    // The lease keeps real time: the fake clock's jumps must not cost a running run its thread.
    const lease = createMemoryLease({ now: () => Date.now() });
    /** Another replica on the same store and lease (closed by the caller). */
    const replica = () => makeApp({ ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" }, { ...options, ...extra, tools, clock, storage: async () => ({ store, lease }), intervalJobs: false });
    /** Task writes fail until `until` holds (the run's end has come and gone), then work again. */
    const loseTaskWritesUntil = async (until: () => Promise<boolean>, ms = 5_000) => {
      tasks.broken = true;
      await waitFor(until, ms);
      await new Promise((r) => setTimeout(r, 100));
      tasks.broken = false;
    };
    const a = await replica();
    /** Approved in the web page while task writes fail: the run's end cannot settle the task. Its SSE text. */
    const decideWhileTaskWritesFail = async (task: Json, approval: Json): Promise<string> => {
      tasks.broken = true;
      const decided = await (await a.fetch(post(`/threads/${task.contextId}/approvals/${approval.approval_id}`, { decision: "approve", digest: approval.digest }))).text();
      await waitFor(() => a.logs.some((l) => l.message === "settling after a resumed run failed"), 3_000);
      tasks.broken = false;
      return decided;
    };
    return { a, replica, inner, clock, tasks, loseTaskWritesUntil, decideWhileTaskWritesFail };
  }
  const job = (a: TestApp, name: string) => a.jobs.find((j) => j.name === name)!.run();
  /** `passes` runs of the settling sweep, each once the clock has moved on 31 s. */
  async function sweepLater(a: TestApp, clock: { t: number }, passes = 1): Promise<void> {
    for (let i = 0; i < passes; i++) {
      clock.t += 31_000;
      await job(a, "settling A2A tasks");
    }
  }

  it("a waiting task whose run's end could not write its outcome (the store failed once) is settled by the sweep once it has been still 30 s", async () => {
    const { a, clock, decideWhileTaskWritesFail } = await flakyTaskWrites();
    try {
      const { task, approval } = await waitingTask(a);
      expect(await decideWhileTaskWritesFail(task, approval)).toContain("event: message.end");
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_INPUT_REQUIRED");
      await job(a, "settling A2A tasks");
      // Too soon: a run's own settle may still be on its way.
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_INPUT_REQUIRED");
      await sweepLater(a, clock);
      const final = (await rpc(a, "GetTask", { id: task.id })) as Json;
      expect(final.status.state).toBe("TASK_STATE_COMPLETED");
      expect(JSON.stringify(final.artifacts)).toContain("created");
      expect(JSON.stringify(final.status)).toContain("The run continued after the approval was decided");
      expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(1);
    } finally {
      await a.close();
    }
  });

  it("a task another writer updated after the sweep read it is not written from the stale read; the next pass settles it", async () => {
    const { a, inner, clock, tasks, decideWhileTaskWritesFail } = await flakyTaskWrites();
    try {
      const { task, approval } = await waitingTask(a);
      await decideWhileTaskWritesFail(task, approval);
      const touched = [{ kind: "text" as const, text: "written by another writer meanwhile" }];
      tasks.afterStranded = async () => {
        tasks.afterStranded = undefined;
        expect(await inner.updateTask(task.id, { status_parts: touched, updated_at: new Date(clock.t).toISOString() })).toBe(true);
      };
      await sweepLater(a, clock);
      const after = (await inner.getTask(task.id))!;
      expect(after.state).toBe("input-required");
      expect(after.status_parts).toEqual(touched);
      await sweepLater(a, clock);
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_COMPLETED");
      expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(1);
    } finally {
      await a.close();
    }
  });

  it("a waiting task whose settle write met a row lock another connection held (cancelled by the lock timeout) is settled by the sweep once the lock is gone", async () => {
    const schema = pg.fresh();
    const clock = { ahead: 0, now: () => Date.now() + clock.ahead };
    const env = { CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" };
    const a = await pg.track(makeApp(env, { ...options, sqlSchema: schema, clock, intervalJobs: false }));
    const { task, approval } = await waitingTask(a);
    await pg.holding(schema, "SELECT 1 FROM a2a_tasks WHERE task_id = $1 FOR UPDATE", [task.id], async () => {
      const decided = await (await a.fetch(post(`/threads/${task.contextId}/approvals/${approval.approval_id}`, { decision: "approve", digest: approval.digest }))).text();
      expect(decided).toContain("event: message.end");
      await waitFor(() => a.logs.some((l) => l.message === "settling after a resumed run failed"), 5_000);
    });
    expect(await stateOf(a, task.id)).toBe("TASK_STATE_INPUT_REQUIRED");
    clock.ahead = 31_000;
    await job(a, "settling A2A tasks");
    const final = (await rpc(a, "GetTask", { id: task.id })) as Json;
    expect(final.status.state).toBe("TASK_STATE_COMPLETED");
    expect(JSON.stringify(final.artifacts)).toContain("created");
    expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(1);
  }, 20_000);

  it("a task canceled after the sweep read it stays canceled: the sweep's late write is refused (the call is still sent once)", async () => {
    const { a, clock, tasks, decideWhileTaskWritesFail } = await flakyTaskWrites();
    try {
      const { task, approval } = await waitingTask(a);
      await decideWhileTaskWritesFail(task, approval);
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_INPUT_REQUIRED");
      tasks.afterStranded = async () => {
        tasks.afterStranded = undefined;
        expect(((await rpc(a, "CancelTask", { id: task.id })) as Json).status.state).toBe("TASK_STATE_CANCELED");
      };
      await sweepLater(a, clock);
      expect(tasks.afterStranded).toBeUndefined();
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_CANCELED");
      expect(upstream.hits.filter((h) => h.headers["idempotency-key"] === approval.approval_id)).toHaveLength(1);
    } finally {
      await a.close();
    }
  });

  it("a task whose own run ended while the task's final write failed is settled by the sweep from that run's record", async () => {
    const { a, inner, clock, loseTaskWritesUntil } = await flakyTaskWrites();
    try {
      const { task, approval } = await waitingTask(a);
      // Decided on the task: the resumed run is the task's own.
      const decided = (await rpc(a, "SendMessage", { ...message([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { taskId: task.id }), configuration: { returnImmediately: true } })).task as Json;
      expect(decided.status.state).toBe("TASK_STATE_WORKING");
      await loseTaskWritesUntil(async () => (await inner.listRuns(task.contextId)).every((r) => r.status !== "running"));
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_WORKING");
      await sweepLater(a, clock);
      await expectCompletedOnce(a, task, approval);
    } finally {
      await a.close();
    }
  });

  it("a structured answer read back by the sweep keeps its data part, as the run's own end would have written it", async () => {
    const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false };
    const { a, inner, clock, loseTaskWritesUntil } = await flakyTaskWrites(options.tools, { responseSchema: schema });
    try {
      const task = (await rpc(a, "SendMessage", { ...message([{ text: '/sleep 300\n/json {"answer":"yes"}' }]), configuration: { returnImmediately: true } })).task as Json;
      await loseTaskWritesUntil(async () => (await inner.listRuns(task.contextId)).some((r) => r.status === "ok"));
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_WORKING");
      await sweepLater(a, clock);
      const final = (await rpc(a, "GetTask", { id: task.id })) as Json;
      expect(final.status.state).toBe("TASK_STATE_COMPLETED");
      expect(final.artifacts[0].parts).toEqual([{ text: '{"answer":"yes"}' }, { data: { answer: "yes" }, mediaType: "application/json" }]);
    } finally {
      await a.close();
    }
  });

  it("a task whose long run ended only just now is left to that run's own end, though the task itself was last written long ago", async () => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const long = defineTool({ name: "long_job", description: "takes a while", parameters: { type: "object", properties: {} }, calls: [], run: async () => (await finished, "done") });
    const { a, inner, clock, tasks } = await flakyTaskWrites([long]);
    try {
      const task = (await rpc(a, "SendMessage", { ...message([{ text: "/call long_job {}" }]), configuration: { returnImmediately: true } })).task as Json;
      await waitFor(async () => (await inner.getTask(task.id))?.run_id !== null, 3_000);
      // The run has gone on for a minute; it ends now and its task's final write is lost.
      clock.t += 60_000;
      tasks.broken = true;
      finish();
      await waitFor(async () => (await inner.listRuns(task.contextId)).every((r) => r.status !== "running"), 3_000);
      await new Promise((r) => setTimeout(r, 100));
      tasks.broken = false;
      await job(a, "settling A2A tasks");
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_WORKING");
      await sweepLater(a, clock);
      expect(await stateOf(a, task.id)).toBe("TASK_STATE_COMPLETED");
    } finally {
      await a.close();
    }
  });

  it("a task whose own resume was cut (its replica closed, its write lost) takes the outcome of the run another replica then resumed with the decision", async () => {
    const { a, replica, inner, clock, tasks } = await flakyTaskWrites();
    const b = await replica();
    try {
      const { task, approval } = await waitingTask(a);
      await rpc(a, "SendMessage", { ...message([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { taskId: task.id }), configuration: { returnImmediately: true } });
      await new Promise((r) => setTimeout(r, 150));
      tasks.broken = true;
      await a.close();
      tasks.broken = false;
      // The task still names the cut run; replica B's sweep resumes the paused run and sends the call.
      await job(b, "approval sweep");
      await waitFor(async () => (await inner.listRuns(task.contextId)).every((r) => r.status !== "running") && upstream.hits.length > 0, 5_000);
      await sweepLater(b, clock, 2);
      await expectCompletedOnce(b, task, approval);
    } finally {
      await b.close();
    }
  });

  it("a task whose own run paused while its write was lost, and whose approval was then decided in the web page, takes the outcome of the run that resumed it", async () => {
    const { a, inner, clock, loseTaskWritesUntil } = await flakyTaskWrites();
    try {
      const sent = (await rpc(a, "SendMessage", { ...message([{ text: `/sleep 300\n${GATED}` }]), configuration: { returnImmediately: true } })).task as Json;
      await loseTaskWritesUntil(async () => (await inner.listRuns(sent.contextId)).some((r) => r.status === "awaiting_approval"));
      const [approval] = await inner.listApprovals({ thread_id: sent.contextId, limit: 10, offset: 0 });
      await (await a.fetch(post(`/threads/${sent.contextId}/approvals/${approval!.approval_id}`, { decision: "approve", digest: approval!.digest }))).text();
      expect(await stateOf(a, sent.id)).toBe("TASK_STATE_WORKING");
      await sweepLater(a, clock, 2);
      const final = (await rpc(a, "GetTask", { id: sent.id })) as Json;
      expect(final.status.state).toBe("TASK_STATE_COMPLETED");
      expect(JSON.stringify(final.artifacts)).toContain("created");
    } finally {
      await a.close();
    }
  });
});
