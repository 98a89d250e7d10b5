/**
 * Replicas under CHECKPOINTER=sql (spec 8 run concurrency and lease, 3.1, 3.2): two createApp
 * instances on one database and one schema act as one service. Threads, approvals and the lease
 * are shared; the lease fences writes of a run that lost it; U+0000 is stored as U+FFFD.
 *
 * Needs the PostgreSQL at 127.0.0.1:5432 (user postgres, database test, trust auth), or
 * TEST_SQLDB_DSN. Every schema made here is dropped in afterAll.
 */
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PostgresAdapters } from "../../src/store/postgres/index.js";
import { LeaseLost } from "../../src/errors.js";
import { chat, get, makeApp, parseSse, post, readUntil, waitFor, type TestApp } from "../helpers.js";
import { closeWhenDone, scratchDatabase, TEST_DSN as DSN } from "../support/postgres.js";
import { createOrder, ordersPolicy, pauseOn } from "../support/orders.js";
import { recordingUpstream } from "../support/upstream.js";

/**
 * Schemas, apps, handles and clients made here: closed after the test or block that opened them
 * (this file opens over 20 apps), and the schemas dropped in afterAll.
 */
const pg = scratchDatabase();
const { fresh, handle, admin } = pg;
closeWhenDone(pg, "each");

// ---------------------------------------------------------------------------------------------
// a loopback upstream that counts requests, and create_order, whose POST the policy gates

const upstream = recordingUpstream();
const hits = upstream.hits;

const POLICY = ordersPolicy();

// ---------------------------------------------------------------------------------------------
// helpers

const env = () => ({ CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" });

function replica(schema: string, options: Parameters<typeof makeApp>[1] = {}): Promise<TestApp> {
  return pg.track(makeApp(env(), { sqlSchema: schema, policyText: POLICY, tools: [createOrder], sweepIntervalMs: 60_000, ...options }));
}

const decide = (a: TestApp, thread: string, id: string, body: Record<string, unknown>) => a.fetch(post(`/threads/${thread}/approvals/${id}`, body));

async function messagesVia(a: TestApp, thread: string) {
  const res = await a.fetch(get(`/threads/${thread}/messages`));
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string; role: string; content: string }[];
}

const pause = pauseOn;

afterAll(() => pg.cleanup());

// ---------------------------------------------------------------------------------------------

describe("two createApp instances on one schema act as replicas", () => {
  let schema: string;
  let a: TestApp;
  let b: TestApp;
  closeWhenDone(pg, "block");

  beforeAll(async () => {
    schema = fresh();
    a = await replica(schema);
    b = await replica(schema);
    expect((await a.fetch(new Request("http://test/ready"))).status).toBe(200);
    expect((await b.fetch(new Request("http://test/ready"))).status).toBe(200);
  });

  it("parallel chats on one thread across both replicas: exactly one 200 and one 409 thread_busy", async () => {
    // the thread exists first
    expect((await chat(a, { message: "hello", thread_id: "busy" })).res.status).toBe(200);
    for (const [first, second] of [
      [a, b],
      [b, a],
      [a, b],
    ] as const) {
      const results = await Promise.all([
        chat(first, { message: "/sleep 300\nfirst", thread_id: "busy" }),
        chat(second, { message: "/sleep 300\nsecond", thread_id: "busy" }),
      ]);
      const statuses = results.map((r) => r.res.status).sort();
      expect(statuses).toEqual([200, 409]);
      const busy = results.find((r) => r.res.status === 409)!;
      expect(busy.json).toMatchObject({ code: "thread_busy" });
      expect(typeof busy.json.detail).toBe("string");
      const ok = results.find((r) => r.res.status === 200)!;
      expect(ok.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    }
    // 1 + 3 runs, two messages each, the same through either replica
    const viaA = await messagesVia(a, "busy");
    expect(viaA).toHaveLength(8);
    expect(await messagesVia(b, "busy")).toEqual(viaA);
  });

  it("a thread written through one replica is read through the other", async () => {
    const first = await chat(a, { message: "written on a", thread_id: "shared" });
    expect(first.res.status).toBe(200);
    const second = await chat(b, { message: "written on b", thread_id: "shared" });
    expect(second.res.status).toBe(200);
    const viaB = await messagesVia(b, "shared");
    expect(viaB.map((m) => [m.role, m.content])).toEqual([
      ["user", "written on a"],
      ["assistant", "echo: written on a"],
      ["user", "written on b"],
      ["assistant", "echo: written on b"],
    ]);
    expect(await messagesVia(a, "shared")).toEqual(viaB);
    const listed = (await (await b.fetch(get("/threads"))).json()) as { thread_id: string }[];
    expect(listed.map((t) => t.thread_id)).toContain("shared");
    // the run record of a's run is visible to b
    const runId = first.events[0]!.data.run_id as string;
    const runs = await (await handle(schema)).store.listRuns("shared");
    expect(runs.find((r) => r.run_id === runId)).toMatchObject({ status: "ok" });
  });

  it("an approval created on one replica is decided on the other; the call is sent exactly once", async () => {
    hits.length = 0;
    const { approval, run_id } = await pause(a, "ap1");
    expect(hits).toHaveLength(0);
    // b sees it pending and refuses new messages on the thread
    const listed = (await (await b.fetch(get("/threads/ap1/approvals"))).json()) as { approval_id: string; status: string }[];
    expect(listed).toEqual([expect.objectContaining({ approval_id: approval.approval_id, status: "pending" })]);
    const refused = await chat(b, { message: "next", thread_id: "ap1" });
    expect(refused.res.status).toBe(409);
    expect(refused.json.code).toBe("approval_pending");

    const res = await decide(b, "ap1", approval.approval_id, { decision: "approve", digest: approval.digest });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events[0]).toMatchObject({ event: "message.start", data: { approval_id: approval.approval_id, decision: "approve", thread_id: "ap1" } });
    expect(events.find((e) => e.event === "tool.result")!.data).toMatchObject({ is_error: false });
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(hits).toEqual([{ method: "POST", url: "/orders", body: JSON.stringify({ item: "book" }), headers: expect.objectContaining({ "idempotency-key": approval.approval_id }) }]);

    // a sees the decision; a second decision on a is refused and sends nothing
    const again = await decide(a, "ap1", approval.approval_id, { decision: "approve" });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "approval_not_pending", status: "approved" });
    const h = await handle(schema);
    expect((await h.store.getRun(run_id))!.resumed_by).toEqual(events[0]!.data.run_id);
    const next = await chat(a, { message: "thanks", thread_id: "ap1" });
    expect(next.res.status).toBe(200);
    expect(hits).toHaveLength(1);
  });

  it("20 concurrent decisions split across both replicas: exactly one 200 and one upstream request", async () => {
    hits.length = 0;
    const { approval } = await pause(b, "ap20");
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => decide(i % 2 === 0 ? a : b, "ap20", approval.approval_id, { decision: "approve" })),
    );
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    const events = parseSse(await ok[0]!.text());
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    for (const r of responses.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409);
      expect(((await r.json()) as { code: string }).code).toBe("approval_not_pending");
    }
    expect(hits).toHaveLength(1);
    // nothing is sent later either
    await new Promise((r) => setTimeout(r, 100));
    expect(hits).toHaveLength(1);
  });

  it("stores U+0000 as U+FFFD and reads it back that way through either replica", async () => {
    const res = await a.fetch(post("/chat", '{"message":"a\\u0000b","thread_id":"nul"}'));
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    for (const r of [a, b]) {
      const messages = await messagesVia(r, "nul");
      expect(messages.map((m) => m.content)).toEqual(["a\ufffdb", "echo: a\ufffdb"]);
      expect(JSON.stringify(messages)).not.toContain("\\u0000");
    }
  });

  // Both replicas create the same thread at once: the loser waits for the winner's insert and
  // reads its row (an earlier ON CONFLICT DO NOTHING version answered 500 here).
  it("parallel first chats on new threads across replicas: never a 500, one 200 and one 409 each", async () => {
    const rounds = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        Promise.all([chat(a, { message: "/sleep 300\nx", thread_id: `new-${i}` }), chat(b, { message: "/sleep 300\ny", thread_id: `new-${i}` })]),
      ),
    );
    const statuses = rounds.map((pair) => pair.map((r) => r.res.status).sort());
    expect(statuses).toEqual(Array.from({ length: 8 }, () => [200, 409]));
  });
});

describe("many chats at once (the adapter batches their writes)", () => {
  it("40 first chats and then 40 follow-ups across two replicas: every thread holds its own four messages and two ok runs", async () => {
    const schema = fresh();
    const debug = await pg.track(makeApp({ ...env(), LOG_LEVEL: "DEBUG" }, { sqlSchema: schema, sweepIntervalMs: 60_000 }));
    const other = await replica(schema);
    const threads = Array.from({ length: 40 }, (_, i) => `many-${i}`);
    const via = (i: number) => (i % 2 === 0 ? debug : other);
    for (const round of ["first", "second"]) {
      const results = await Promise.all(threads.map((thread, i) => chat(via(i), { message: `${round} ${i}`, thread_id: thread })));
      for (const r of results) expect(r.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    }
    const h = await handle(schema);
    for (const [i, thread] of threads.entries()) {
      expect((await messagesVia(via(i + 1), thread)).map((m) => m.content)).toEqual([`first ${i}`, `echo: first ${i}`, `second ${i}`, `echo: second ${i}`]);
      const runs = await h.store.listRuns(thread);
      expect(runs.map((r) => r.status)).toEqual(["ok", "ok"]);
      expect(await h.lease.isHeld(thread)).toBe(false);
    }
    // The writes did go in batches, and none had to be retried one call at a time.
    const logs = debug.logs;
    const sizes = logs.filter((l) => l.message === "batched write").map((l) => l.size as number);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(logs.filter((l) => l.level === "WARNING")).toEqual([]);
  });
});

describe("a schema a later version extended", () => {
  it("columns added later (NOT NULL with a default) keep their defaults under this version's writes, single and batched", async () => {
    const schema = fresh();
    await handle(schema); // the schema as this version makes it
    const sql = admin(schema);
    for (const table of ["threads", "messages", "runs", "leases", "approvals", "a2a_tasks"])
      await sql.unsafe(`ALTER TABLE ${table} ADD COLUMN later text NOT NULL DEFAULT 'later'`);
    const a = await replica(schema);
    expect((await chat(a, { message: "one", thread_id: "later-0" })).res.status).toBe(200);
    expect((await chat(a, { message: "two", thread_id: "later-0" })).res.status).toBe(200);
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(a, { message: `m${i}`, thread_id: `later-${i + 1}` })));
    for (const r of many) expect(r.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    const [runs] = await sql`SELECT count(*)::int AS n, count(*) FILTER (WHERE later = 'later' AND status = 'ok')::int AS ok FROM runs`;
    expect(runs).toEqual({ n: 22, ok: 22 });
    const [messages] = await sql`SELECT count(*)::int AS n FROM messages WHERE later = 'later'`;
    expect(messages!.n).toBe(44);
  });
});

describe("lease fencing (spec 8)", () => {
  let schema: string;
  let h: PostgresAdapters;
  let sql: postgres.Sql;
  closeWhenDone(pg, "block");

  beforeAll(async () => {
    schema = fresh();
    h = await handle(schema);
    sql = admin(schema);
  });

  it("a stale LeaseHandle's append is refused with LeaseLost after a takeover, and nothing of it is written", async () => {
    const at = () => new Date().toISOString();
    await h.store.createThread({ thread_id: "f1", owner: "o", actor: null, created_at: at(), updated_at: "2026-01-01T00:00:00.000+00:00" });
    const stale = (await h.lease.acquire("f1", "replica-a:run-1", 300))!;
    expect(stale).not.toBeNull();
    await h.store.appendMessages("f1", [{ id: "m1", role: "user", content: "kept" }], "2026-01-01T00:00:01.000+00:00", stale);
    // the holder stalls; its lease expires and another replica takes the thread
    expect(await h.lease.acquire("f1", "replica-b:run-2", 5_000)).toBeNull();
    await new Promise((r) => setTimeout(r, 350));
    const current = (await h.lease.acquire("f1", "replica-b:run-2", 5_000))!;
    expect(current).not.toBeNull();
    expect(current.generation).toBeGreaterThan(stale.generation);

    const refused = h.store.appendMessages(
      "f1",
      [
        { id: "m2", role: "assistant", content: "stale one" },
        { id: "m3", role: "user", content: "stale two" },
      ],
      "2026-01-01T00:00:09.000+00:00",
      stale,
    );
    await expect(refused).rejects.toBeInstanceOf(LeaseLost);
    expect(await h.lease.renew(stale, 5_000)).toBe(false);
    // releasing the stale handle does not free the new holder's lease
    await h.lease.release(stale);
    expect(await h.lease.isHeld("f1")).toBe(true);

    expect((await h.store.getMessages("f1")).map((m) => m.id)).toEqual(["m1"]);
    expect((await h.store.getThread("f1"))!.updated_at).toBe("2026-01-01T00:00:01.000+00:00");
    // the new holder writes
    await h.store.appendMessages("f1", [{ id: "m4", role: "user", content: "new holder" }], "2026-01-01T00:00:10.000+00:00", current);
    expect((await h.store.getMessages("f1")).map((m) => m.id)).toEqual(["m1", "m4"]);
    await h.lease.release(current);
  });

  it("a run that stalls past its lease (cannot renew) is refused when it writes: interrupted, nothing of it stored", async () => {
    // renewal every 10 s but a 1 s lease: the run's lease lapses while the model sleeps (2.5 s)
    const a = await replica(schema, { leaseTimings: { renewMs: 10_000, ttlMs: 1_000 } });
    const b = await replica(schema, { leaseTimings: { renewMs: 100, ttlMs: 1_000 } });
    expect((await chat(a, { message: "before", thread_id: "f2" })).res.status).toBe(200);
    const res = await a.fetch(post("/chat", { message: "/sleep 2500\nstalled", thread_id: "f2" }));
    expect(res.status).toBe(200);
    const { reader, events } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    const runId = events[0]!.data.run_id as string;
    await waitFor(async () => (await h.store.getMessages("f2")).length === 3, 2_000);

    // while the lease is unexpired the other replica is refused; once it lapsed, it takes the thread
    const busy = await chat(b, { message: "too early", thread_id: "f2" });
    expect(busy.res.status).toBe(409);
    expect(busy.json.code).toBe("thread_busy");
    let taken: Awaited<ReturnType<typeof chat>> | undefined;
    await waitFor(async () => {
      taken = await chat(b, { message: "/sleep 700\ntaken over", thread_id: "f2" });
      return taken.res.status === 200;
    }, 3_000);
    expect(taken!.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });

    // the stalled run's stream ends with the unavailable error (spec 7.2: it could no longer
    // confirm it was the only run on the thread), never with a message.end
    let rest = "";
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
    }
    const tail = parseSse(rest);
    expect(tail.map((e) => e.event)).not.toContain("message.end");
    expect(tail.at(-1)).toMatchObject({ event: "error", data: { code: "unavailable", run_id: runId } });
    await waitFor(async () => (await h.store.getRun(runId))?.status !== "running", 3_000);
    expect(await h.store.getRun(runId)).toMatchObject({ status: "interrupted", error_type: "LeaseLost" });

    const contents = (await h.store.getMessages("f2")).map((m) => m.content);
    expect(contents).toEqual(["before", "echo: before", "/sleep 2500\nstalled", "/sleep 700\ntaken over", "echo: taken over"]);
    expect(contents.join("\n")).not.toContain("echo: stalled");
    const [row] = await sql`SELECT count(*)::int AS n FROM leases WHERE thread_id = 'f2' AND expires_at > now()`;
    expect(row!.n).toBe(0);
  });

  it("a run whose renewal finds the lease taken stops as interrupted before it writes", async () => {
    const a = await replica(schema, { leaseTimings: { renewMs: 100, ttlMs: 300 } });
    expect((await chat(a, { message: "before", thread_id: "f3" })).res.status).toBe(200);
    const res = await a.fetch(post("/chat", { message: "/sleep 2000\npaused", thread_id: "f3" }));
    const { reader, events } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    const runId = events[0]!.data.run_id as string;
    await waitFor(async () => (await h.store.getMessages("f3")).length === 3, 2_000);
    // another holder takes the thread over (the first one's lease is expired by hand)
    await sql`UPDATE leases SET expires_at = now() - interval '1 second' WHERE thread_id = 'f3'`;
    const intruder = (await h.lease.acquire("f3", "replica-z:run-9", 5_000))!;
    expect(intruder).not.toBeNull();
    const started = Date.now();
    while (!(await reader.read()).done);
    expect(Date.now() - started).toBeLessThan(1_000);
    await waitFor(async () => (await h.store.getRun(runId))?.status === "interrupted", 2_000);
    expect(await h.lease.isHeld("f3")).toBe(true);
    expect((await h.store.getMessages("f3")).map((m) => m.content)).toEqual(["before", "echo: before", "/sleep 2000\npaused"]);
    await h.lease.release(intruder);
  });
});

describe("starting replicas", () => {
  // Two replicas making one fresh schema at once: the migration runs one at a time (an advisory
  // lock), so neither sees the other's half-made catalog as an outage.
  it("replicas started together on a fresh schema log no 'not reachable' warning", async () => {
    for (let i = 0; i < 3; i++) {
      const schema = fresh();
      const pair = await Promise.all([replica(schema), replica(schema)]);
      for (const r of pair) expect((await r.fetch(new Request("http://test/ready"))).status).toBe(200);
      const warnings = pair.flatMap((r) => r.logs.filter((l) => l.level === "WARNING").map((l) => l.message));
      expect(warnings).toEqual([]);
    }
  });
});
