/**
 * An approval is carried out exactly once under faults (two replicas on one PostgreSQL schema, a
 * gated create_order, an upstream that records every request with its Idempotency-Key):
 * an approve racing a chat on the same thread, a decision arriving while the thread is held, a
 * row lock and a table lock held by a second connection (a 503 leaves nothing behind and a retry
 * works at once), and a replica starting while a long transaction is open (nothing stalls).
 *
 * Needs the PostgreSQL at 127.0.0.1:5432 (user postgres, database test, trust auth), or
 * TEST_SQLDB_DSN. Every schema made here is dropped in afterAll.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PostgresAdapters } from "../../src/store/postgres/index.js";
import { chat, get, makeApp, parseSse, post, waitFor, type TestApp } from "../helpers.js";
import { createOrder, ordersPolicy, pauseOn } from "../support/orders.js";
import { closeWhenDone, scratchDatabase, TEST_DSN as DSN } from "../support/postgres.js";
import { created, recordingUpstream } from "../support/upstream.js";

/** Closed after the test or block that opened them (this file opens over 15 apps); schemas dropped in afterAll. */
const pg = scratchDatabase();
const { fresh, handle, admin, holding } = pg;
closeWhenDone(pg, "each");
const upstream = recordingUpstream();
/** Answers after a second: long enough to take a lock while the call is in flight. */
const slowUpstream = recordingUpstream(async (res) => {
  await new Promise((r) => setTimeout(r, 1_000));
  created(res);
});
const sentFor = (approvalId: string) => upstream.hits.filter((h) => h.headers["idempotency-key"] === approvalId).length;

const env = () => ({ CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" });
const FAST = { leaseTimings: { renewMs: 200, ttlMs: 1_000 }, sweepIntervalMs: 100 };

function replica(schema: string, options: Parameters<typeof makeApp>[1] = {}): Promise<TestApp> {
  return pg.track(makeApp(env(), { sqlSchema: schema, policyText: ordersPolicy(), tools: [createOrder], ...FAST, ...options }));
}

const pause = async (a: TestApp, thread: string): Promise<string> => (await pauseOn(a, thread)).approval.approval_id;

const approve = (a: TestApp, thread: string, id: string) => a.fetch(post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }));

/** The whole answer: SSE events, or the JSON body. */
async function drain(res: Response): Promise<{ status: number; events: ReturnType<typeof parseSse>; json: Record<string, unknown> | undefined }> {
  const text = await res.text();
  const sse = res.headers.get("content-type")?.startsWith("text/event-stream") ?? false;
  return { status: res.status, events: sse ? parseSse(text) : [], json: !sse && text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

async function approvalVia(a: TestApp, thread: string, id: string): Promise<Record<string, unknown>> {
  const res = await a.fetch(get(`/threads/${thread}/approvals`));
  expect(res.status).toBe(200);
  return ((await res.json()) as Record<string, unknown>[]).find((x) => x.approval_id === id)!;
}

/** Carried out: sent once, its answer recorded, and nothing more is sent after a while. */
async function expectSentOnce(a: TestApp, thread: string, id: string): Promise<void> {
  await waitFor(async () => (await approvalVia(a, thread, id)).outcome === "sent", 8_000);
  await new Promise((r) => setTimeout(r, 100));
  expect(sentFor(id), `upstream requests for approval ${id}`).toBe(1);
}

const ROW_LOCK = "SELECT 1 FROM approvals WHERE approval_id = $1 FOR UPDATE";

afterAll(() => pg.cleanup());

describe("decisions are carried out once, whoever holds the thread", () => {
  let schema: string;
  let a: TestApp;
  let b: TestApp;
  closeWhenDone(pg, "block");

  beforeAll(async () => {
    schema = fresh();
    a = await replica(schema);
    b = await replica(schema);
  });

  it("an approve on one replica racing a chat on the other, 40 rounds: every approved call is sent exactly once", async () => {
    const chats: Record<string, number> = {};
    for (let round = 0; round < 40; round++) {
      const thread = `race-${round}`;
      const id = await pause(a, thread);
      const gap = round % 4;
      const [decided, chatted] = await Promise.all([
        approve(b, thread, id).then(drain),
        new Promise((r) => setTimeout(r, gap)).then(() => a.fetch(post("/chat", { message: "are you done?", thread_id: thread }))).then(drain),
      ]);
      expect(decided.status, `round ${round}`).toBe(200);
      const key = chatted.status === 200 ? "200" : `${chatted.status} ${String(chatted.json?.code)}`;
      chats[key] = (chats[key] ?? 0) + 1;
      // The chat never overtakes the decision: it waits its turn (409) or runs after the call was made.
      expect(["200", "409 thread_busy", "409 approval_pending"], `round ${round}`).toContain(key);
      await expectSentOnce(a, thread, id);
      const messages = (await (await a.fetch(get(`/threads/${thread}/messages`))).json()) as { role: string; content: string }[];
      expect(messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([expect.stringContaining('"created":true')]);
    }
    // Every kind of interleaving happened at least once in 40 rounds is not guaranteed; the counts say which did.
    console.log("approve vs chat, chat answers:", JSON.stringify(chats));
  }, 120_000);

  it("a decision that finds the thread held is queued, and the recovery sweep carries it out once the thread is free", async () => {
    const thread = "held";
    const id = await pause(a, thread);
    const h: PostgresAdapters = await handle(schema);
    // Another holder (a paused run still writing its end, a stalled replica) has the thread.
    const other = (await h.lease.acquire(thread, "other-replica:run", 10_000))!;
    expect(other).not.toBeNull();
    const decided = await drain(await approve(b, thread, id));
    expect(decided.status).toBe(200);
    expect(decided.json).toMatchObject({ resumed: false, queued: true, approval: { status: "approved" } });
    await new Promise((r) => setTimeout(r, 500));
    expect(sentFor(id)).toBe(0);
    // A chat meanwhile is refused as busy: it does not run before the approved call.
    expect((await chat(a, { message: "hello", thread_id: thread })).res.status).toBe(409);
    await h.lease.release(other);
    await expectSentOnce(a, thread, id);
    const runs = await h.store.listRuns(thread);
    const paused = runs.find((r) => r.status === "awaiting_approval")!;
    expect(paused.resumed_by).toBe(runs.find((r) => r.resumed_from === paused.run_id)!.run_id);
  });

  it("a decision arriving while the paused run still holds the thread waits for it and streams the resumed run", async () => {
    // Replicas of their own, without a quick sweep: here the decider itself must get the thread.
    const quiet = fresh();
    const [a, b] = [await replica(quiet, { sweepIntervalMs: 60_000 }), await replica(quiet, { sweepIntervalMs: 60_000 })];
    const thread = "still-held";
    const id = await pause(a, thread);
    const h = await handle(quiet);
    // The paused run is still writing its end: it lets the thread go a moment later.
    const paused = (await h.lease.acquire(thread, "same-replica:paused-run", 10_000))!;
    setTimeout(() => void h.lease.release(paused), 300);
    const decided = await drain(await approve(b, thread, id));
    expect(decided.status).toBe(200);
    expect(decided.events[0]).toMatchObject({ event: "message.start", data: { approval_id: id, decision: "approve" } });
    expect(decided.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    await expectSentOnce(a, thread, id);
  });

  it("a chat that takes the thread first carries out the decided call before anything else, and is refused meanwhile", async () => {
    // Replicas without a quick sweep: the chat, not the sweep, must find the decision to carry out.
    const quiet = fresh();
    const [a, b] = [await replica(quiet, { sweepIntervalMs: 60_000 }), await replica(quiet, { sweepIntervalMs: 60_000 })];
    const thread = "chat-first";
    const id = await pause(a, thread);
    const h = await handle(quiet);
    // The decision is recorded, but no one resumed it yet (its decider died before it could).
    const approval = (await h.store.getApproval(id))!;
    expect(await h.store.decideApproval(id, { status: "approved", decided_by: approval.requester, decided_via: null, decided_at: new Date().toISOString(), comment: null, dropCall: true })).not.toBeNull();
    expect((await h.store.threadBlockers(thread)).due?.run_id).toBe(approval.run_id);
    const res = await chat(b, { message: "next question", thread_id: thread });
    expect(res.res.status).toBe(409);
    expect(res.json.code).toBe("thread_busy");
    await expectSentOnce(a, thread, id);
    await waitFor(async () => (await chat(a, { message: "next question", thread_id: thread })).res.status === 200, 5_000);
    const contents = (await h.store.getMessages(thread)).map((m) => m.content);
    // the tool result of the approved call comes before the next question
    const result = contents.findIndex((c) => c.includes('"created":true'));
    expect(result).toBeGreaterThan(0);
    expect(result).toBeLessThan(contents.indexOf("next question"));
  });

  it("every approved send carries Idempotency-Key: <approval id>", async () => {
    const thread = "key";
    const id = await pause(a, thread);
    const before = upstream.hits.length;
    expect((await drain(await approve(a, thread, id))).status).toBe(200);
    const sent = upstream.hits.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers["idempotency-key"]).toBe(id);
  });
});

describe("a slow database: a 503 means nothing was done", () => {
  let schema: string;
  let a: TestApp;
  closeWhenDone(pg, "block");

  beforeAll(async () => {
    schema = fresh();
    a = await replica(schema);
  });

  it("an approve waiting on a row lock held by another connection answers 503, records nothing, and a retry after the lock goes sends the call once", async () => {
    const thread = "row-lock";
    const id = await pause(a, thread);
    const sql = admin(schema);
    await holding(schema, ROW_LOCK, [id], async () => {
      const t0 = performance.now();
      const res = await approve(a, thread, id);
      expect(res.status).toBe(503);
      expect(performance.now() - t0).toBeLessThan(3_500);
      // The server is up and rolled the statement back: busy, not unreachable.
      expect(((await res.json()) as { detail: string }).detail).toContain("(database busy; nothing was done, try again)");
      const [row] = await sql`SELECT status FROM approvals WHERE approval_id = ${id}`;
      expect(row!.status).toBe("pending");
    });
    const [row] = await sql`SELECT status FROM approvals WHERE approval_id = ${id}`;
    expect(row!.status).toBe("pending");
    expect(sentFor(id)).toBe(0);
    const again = await drain(await approve(a, thread, id));
    expect(again.status).toBe(200);
    // The resumed run's stream; or, when the resume found the thread or the database busy (a
    // loaded machine, where the replica's short timeouts bite), the decision recorded and queued
    // for the next holder of the thread or the sweep. Either way the call goes out once.
    if (again.json) expect(again.json).toMatchObject({ approval: { approval_id: id, status: "approved" }, resumed: false, queued: true });
    else expect(again.events[0]).toMatchObject({ event: "message.start", data: { approval_id: id, decision: "approve" } });
    await expectSentOnce(a, thread, id);
  });

  it("a decision recorded while another connection locks the leases table is answered queued, not 503, and the call is sent once after the lock goes", async () => {
    const thread = "lease-lock";
    const id = await pause(a, thread);
    const decided = await holding(schema, "LOCK TABLE leases IN ACCESS EXCLUSIVE MODE", [], async () => {
      const answer = await drain(await approve(a, thread, id));
      expect(sentFor(id)).toBe(0);
      return answer;
    });
    // The decision is recorded: a 503 here would tell the client nothing was done.
    expect(decided.status).toBe(200);
    expect(decided.json).toMatchObject({ resumed: false, queued: true, approval: { status: "approved" }, pending: [] });
    await expectSentOnce(a, thread, id);
  });

  it("an approved call whose claim meets a row lock is not lost: each resume fails as unavailable (more than three times), and the call is sent once after the lock goes", async () => {
    const own = fresh();
    const r = await replica(own);
    const h = await handle(own);
    const thread = "claim-lock";
    const id = await pause(r, thread);
    // The decision is queued behind another holder, so the lock below is in place before any resume.
    const holder = (await h.lease.acquire(thread, "other-replica:run", 10_000))!;
    expect((await drain(await approve(r, thread, id))).json).toMatchObject({ queued: true });
    const failedResumes = async () => (await h.store.listRuns(thread)).filter((x) => x.resumed_from !== null && x.status === "error");
    await holding(own, ROW_LOCK, [id], async () => {
      await h.lease.release(holder);
      // The sweep resumes the run; its claim waits on the lock until the server cancels it.
      await waitFor(async () => (await failedResumes()).length >= 4, 20_000);
      expect((await failedResumes()).every((x) => x.error_type === "DatabaseUnavailable")).toBe(true);
      expect(sentFor(id)).toBe(0);
      const [row] = await admin(own)`SELECT status FROM approvals WHERE approval_id = ${id}`;
      expect(row!.status).toBe("approved");
    });
    await expectSentOnce(r, thread, id);
    // The paused run is marked resumed once the call's result is written, a moment after its answer.
    await waitFor(async () => (await h.store.listRuns(thread)).find((x) => x.status === "awaiting_approval")!.resumed_by !== null, 5_000);
  }, 40_000);

  it("a sent call whose answer cannot be recorded (a row lock) fails the run as unavailable, is never sent again, and is read as unknown", async () => {
    const own = fresh();
    // Without a quick sweep, so the decider itself resumes the run (and streams what happens).
    const slowReplica = (sweepIntervalMs: number) =>
      pg.track(makeApp({ ...env(), ORDERS_URL: slowUpstream.base }, { sqlSchema: own, policyText: ordersPolicy(), tools: [createOrder], ...FAST, sweepIntervalMs }));
    const r = await slowReplica(60_000);
    const thread = "answer-lock";
    const id = await pause(r, thread);
    const answer = approve(r, thread, id).then(drain);
    // The call is on the wire: lock its approval before the answer comes back.
    await waitFor(async () => slowUpstream.hits.some((h) => h.headers["idempotency-key"] === id), 5_000);
    const decided = await holding(own, ROW_LOCK, [id], async () => {
      const ended = await answer;
      await new Promise((res) => setTimeout(res, 500));
      return ended;
    });
    // Not "The tool failed" with the run ending ok: the model was never told anything false.
    expect(decided.events.at(-1)).toMatchObject({ event: "error", data: { code: "unavailable" } });
    expect(String(decided.events.at(-1)!.data.message)).toMatch(/^The database is busy\. Reference: /);
    expect(decided.events.some((e) => e.event === "tool.result")).toBe(false);
    // Another replica's sweep resumes the run: the claimed call without a recorded answer is read as unknown.
    await slowReplica(100);
    await waitFor(async () => (await approvalVia(r, thread, id)).outcome === "unknown", 8_000);
    // The outcome is marked before the resumed run writes the tool's result: wait for that too.
    const toolText = async () =>
      ((await (await r.fetch(get(`/threads/${thread}/messages`))).json()) as { role: string; content: string }[])
        .filter((m) => m.role === "tool")
        .map((m) => m.content)
        .join(" ");
    await waitFor(async () => (await toolText()).includes("the run sending it ended before its answer was recorded"), 8_000);
    await new Promise((res) => setTimeout(res, 300));
    expect(slowUpstream.hits.filter((h) => h.headers["idempotency-key"] === id)).toHaveLength(1);
  }, 30_000);

  it("a chat that meets a table lock answers 503 and leaves no thread, message, run record or lease: the retry works at once", async () => {
    const sql = admin(schema);
    await holding(schema, "LOCK TABLE threads IN ACCESS EXCLUSIVE MODE", [], async () => {
      const t0 = performance.now();
      const res = await a.fetch(post("/chat", { message: "hello", thread_id: "table-lock" }));
      expect(res.status).toBe(503);
      expect(((await res.json()) as { detail: string }).detail).toContain("database busy");
      expect(performance.now() - t0).toBeLessThan(3_500);
    });
    // A statement the server did not cancel would go on once the lock is gone, and commit.
    await new Promise((r) => setTimeout(r, 500));
    for (const table of ["threads", "messages", "runs"]) {
      const [row] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${table} WHERE thread_id = 'table-lock'`);
      expect(row!.n, table).toBe(0);
    }
    const [lease] = await sql`SELECT count(*)::int AS n FROM leases WHERE thread_id = 'table-lock' AND expires_at > now()`;
    expect(lease!.n).toBe(0);
    const retry = await chat(a, { message: "hello", thread_id: "table-lock" });
    expect(retry.res.status).toBe(200);
    expect(retry.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
  });
});

describe("migrations never block a running fleet", () => {
  it("a replica starting while a long transaction reads every table changes nothing, takes no table lock, and stalls no one", async () => {
    const schema = fresh();
    const a = await replica(schema);
    expect((await chat(a, { message: "warm", thread_id: "long-1" })).res.status).toBe(200);
    const sql = admin(schema);
    const report = await sql.reserve();
    try {
      // A report (or a backup) reading every table holds their share locks until it ends.
      await report`BEGIN`;
      for (const table of ["threads", "messages", "runs", "approvals", "a2a_tasks", "leases"]) await report.unsafe(`SELECT count(*) FROM ${table}`);
      const starting = replica(schema);
      await new Promise((r) => setTimeout(r, 150));
      const t0 = performance.now();
      const res = await chat(a, { message: "still here?", thread_id: "long-2" });
      expect(res.res.status).toBe(200);
      expect(performance.now() - t0).toBeLessThan(1_000);
      const c = await starting;
      expect((await c.fetch(new Request("http://test/ready"))).status).toBe(200);
      expect((await chat(c, { message: "new replica", thread_id: "long-3" })).res.status).toBe(200);
      expect(performance.now() - t0).toBeLessThan(2_000);
      expect([...a.logs, ...c.logs].filter((l) => l.level === "WARNING").map((l) => l.message)).toEqual([]);
    } finally {
      await report`ROLLBACK`;
      report.release();
    }
  });

  it("a schema that lacks a column is brought up to date by one starting replica, retrying with a short lock timeout behind a long transaction", async () => {
    const schema = fresh();
    const a = await replica(schema);
    const sql = admin(schema);
    await sql`DROP INDEX runs_paused`;
    const report = await sql.reserve();
    await report`BEGIN`;
    await report`SELECT count(*) FROM runs`;
    const starting = replica(schema);
    await new Promise((r) => setTimeout(r, 300));
    // The waiting migration gives way every half second: the running replica is never held up long.
    const t0 = performance.now();
    expect((await chat(a, { message: "meanwhile", thread_id: "mig-1" })).res.status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(1_500);
    await report`ROLLBACK`;
    report.release();
    const c = await starting;
    expect((await c.fetch(new Request("http://test/ready"))).status).toBe(200);
    const [row] = await sql`SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = ${schema} AND indexname = 'runs_paused'`;
    expect(row!.n).toBe(1);
  });
});
