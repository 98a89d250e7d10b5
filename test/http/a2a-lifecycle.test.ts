import postgres from "postgres";
import { afterEach, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/store/postgres/index.js";
import { silentLogger } from "../../src/observability/logger.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { KEY, makeApp, parseSse, type TestApp, waitFor } from "../helpers.js";
import { TEST_DSN } from "../support/postgres.js";

let app: TestApp;
afterEach(async () => app?.close());

const call = (a: TestApp, method: string, params: Record<string, unknown>) =>
  a.fetch(
    new Request("http://test/a2a/app", {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    }),
  );
const rpc = (a: TestApp, method: string, params: Record<string, unknown>) =>
  call(a, method, params).then((r) => r.json() as Promise<{ result?: { task?: { id: string } } & Record<string, unknown>; error?: { code: number } }>);

/** The promise's value, or a rejection naming `what` when it takes longer than `ms`. */
const within = <T>(ms: number, what: string, p: Promise<T>) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} after ${ms} ms`)), ms))]);

describe("A2A task retention and lost processes", () => {
  it("drops a task A2A_TASK_TTL_S after its last update", async () => {
    const clock = { t: Date.parse("2026-11-22T12:00:00Z"), now: () => clock.t };
    app = await makeApp({ A2A_TASK_TTL_S: "1" }, { clock });
    const sent = await rpc(app, "SendMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "hi" }] } });
    const id = sent.result!.task!.id;
    expect((await rpc(app, "GetTask", { id })).result).toBeDefined();
    clock.t += 5_000;
    await waitFor(async () => (await rpc(app, "GetTask", { id })).error?.code === -32001, 4_000);
  });

  it("fails a working task whose process died (its run marked ProcessLost)", async () => {
    const schema = `lifecycle_${process.pid}_${Date.now().toString(36)}`;
    const pg = await openPostgres({ dsn: TEST_DSN, min: 1, max: 2, schema, logger: silentLogger, onHealth: () => {} });
    try {
      const old = "2026-01-01T00:00:00.000+00:00";
      await pg.store.createThread({ thread_id: "t", owner: "o", actor: null, created_at: old, updated_at: old });
      await pg.store.createRun({
        run_id: "r", thread_id: "t", status: "running", error_type: null, error_id: null, principal_hash: "o", actor: null,
        metadata: {}, usage: { input_tokens: 0, output_tokens: 0 }, created_at: old, updated_at: old, ended_at: null,
        latency_ms: null, resumed_from: null, resumed_by: null,
      });
      await pg.store.createTask({
        task_id: "k", context_id: "t", owner: "o", actor: null, state: "working", status_parts: [], artifacts: [],
        approval_ids: [], run_id: "r", instance_id: "dead", created_at: old, updated_at: old,
      });
      expect(await pg.store.markLostRuns!(1_000)).toBe(1);
      expect(await pg.store.getRun("r")).toMatchObject({ status: "interrupted", error_type: "ProcessLost" });
      const task = (await pg.store.getTask("k"))!;
      expect(task.state).toBe("failed");
      expect(JSON.stringify(task.status_parts)).toContain("run_failed");
    } finally {
      await pg.store.close();
      const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end();
    }
  });
});

/**
 * A memory store whose claimThread waits for `release`: a run's start is held where it claims the
 * thread, so the task exists and is live with no run yet. `claiming` says the hold was reached.
 */
function heldClaims() {
  const inner = createMemoryStore();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let reached = false;
  const store: Store = {
    ...inner,
    claimThread: async (...args) => {
      reached = true;
      await held;
      return inner.claimThread(...args);
    },
  };
  return { store, release, claiming: () => reached };
}

describe("A2A live tasks", () => {
  it("a subscriber arriving after the task is created but before its run starts gets the final task", async () => {
    const { store, release, claiming } = heldClaims();
    app = await makeApp({}, { store });
    const sending = call(app, "SendStreamingMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "early bird" }] } });
    await waitFor(claiming);
    const id = ((await rpc(app, "ListTasks", {})).result!.tasks as { id: string }[])[0]!.id;
    const sub = await call(app, "SubscribeToTask", { id });
    expect(sub.status).toBe(200);
    release();
    await (await sending).text();
    const events = parseSse(await within(3_000, "the subscriber still waits for the final task", sub.text())).map((e) => e.data);
    expect(events[0]!.result.task.id).toBe(id);
    expect(events.at(-1)!.result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("CancelTask arriving before the run started cancels the run as soon as it starts", async () => {
    const { store, release, claiming } = heldClaims();
    app = await makeApp({}, { store });
    const sending = rpc(app, "SendMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "/sleep 3000\ntoo late" }] } });
    await waitFor(claiming);
    const task = ((await rpc(app, "ListTasks", {})).result!.tasks as { id: string; contextId: string }[])[0]!;
    const canceled = (await rpc(app, "CancelTask", { id: task.id })) as { result?: { status: { state: string } } };
    expect(canceled.result!.status.state).toBe("TASK_STATE_CANCELED");
    release();
    // The run (sleeping 3 s before it answers) is stopped as it starts, not left to its end.
    const final = (await within(1_500, "the run went on after its task was canceled", sending)) as { result?: { task?: { status: { state: string } } } };
    expect(final.result!.task!.status.state).toBe("TASK_STATE_CANCELED");
    expect(((await rpc(app, "GetTask", { id: task.id })).result as { status: { state: string } }).status.state).toBe("TASK_STATE_CANCELED");
    const messages = (await (await app.fetch(new Request(`http://test/threads/${task.contextId}/messages`, { headers: { Authorization: `Bearer ${KEY}` } }))).json()) as { content: string }[];
    expect(messages.map((m) => m.content)).not.toContain("echo: too late");
  });
});
