/**
 * The store and lease contracts against the real PostgreSQL at 127.0.0.1:5432 (user postgres,
 * database test; `.ci/run` starts it if it is installed and down). Each run uses a schema of its
 * own, dropped afterwards.
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/store/postgres/index.js";
import type { TaskRecord, TaskState } from "../../src/store/records/task.js";
import { createLogger } from "../../src/observability/logger.js";
import { dropSchemas, scratchDatabase, TEST_DSN } from "../support/postgres.js";
import { approvalRecord } from "../support/records.js";
import { describeLeaseContract } from "./lease.js";
import { describeStoreContract } from "./store.js";

export { TEST_DSN };
const schema = `contract_${process.pid}_${Date.now().toString(36)}`;
let adapters: Awaited<ReturnType<typeof openPostgres>>;
/** What the adapters log (batches and their fallbacks at DEBUG and WARNING). */
const logged: { message: string; size?: number; claims?: number; finishes?: number }[] = [];
const logger = createLogger({ level: "DEBUG", format: "json", write: (line) => logged.push(JSON.parse(line)) });

beforeAll(async () => {
  adapters = await openPostgres({ dsn: TEST_DSN, min: 1, max: 10, schema, logger, onHealth: () => {} });
  await adapters.store.ping();
});
afterAll(async () => {
  await adapters?.store.close();
  await dropSchemas([schema]);
});

it("answers ping", async () => {
  await expect(adapters.store.ping()).resolves.toBeUndefined();
});

// claimThread is given the adapters' own lease port, which it ignores: its leases live in the
// same database and are taken in the same statement.
describeStoreContract(
  "postgres",
  async () => ({
    store: adapters.store,
    lease: adapters.lease,
    spare: async () => (await openPostgres({ dsn: TEST_DSN, min: 1, max: 2, schema, logger, onHealth: () => {} })).store,
  }),
  { sharedByProcesses: true },
);

// Real time at a quarter of the suite's: its checks stand 1 s of suite time clear of the ttl,
// 250 ms here; at a tenth (100 ms) a loaded machine once let the lease expire before the check.
describeLeaseContract("postgres", async () => ({
  lease: adapters.lease,
  scale: 0.25,
  clock: { advance: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) },
}));

describe("postgres: writes that combine the store and the lease", () => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString().replace("Z", "+00:00");
  const row = (id: string) => ({ thread_id: id, owner: "o", actor: null, created_at: at(0), updated_at: at(0) });
  const run = (runId: string, threadId: string) => ({
    run_id: runId, thread_id: threadId, status: "running" as const, error_type: null, error_id: null, principal_hash: "o", actor: null,
    metadata: {}, usage: { input_tokens: 0, output_tokens: 0 }, created_at: at(1), updated_at: at(1), ended_at: null, latency_ms: null,
    resumed_from: null, resumed_by: null,
  });

  const end = (status: "ok" | "error", s: number) => ({
    status, error_type: null, error_id: null, usage: { input_tokens: 3, output_tokens: 4 }, updated_at: at(s), ended_at: at(s), latency_ms: 7,
  });

  const claim = (holder: string) => ({ port: adapters.lease, holder, ttlMs: 10_000 });

  it("claimThread with a start stores U+0000 in the first message as U+FFFD", async () => {
    const id = `start-nul-${crypto.randomUUID()}`;
    const user = { id: "u1", role: "user" as const, content: "hello \u0000 there" };
    const claimed = await adapters.store.claimThread(row(id), claim("h"), { run: run(`r-${id}`, id), messages: [user] });
    expect(claimed).toMatchObject({ created: true, started: true });
    expect(await adapters.store.getMessages(id)).toEqual([{ ...user, content: "hello \ufffd there" }]);
  });

  it("40 chats at once on new and existing threads (claims and finishes batched under load): each gets its own outcome", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `batch-${i}-${crypto.randomUUID()}`);
    // Every fourth thread exists already (no run, no message written by its claim); every
    // eighth has its lease held elsewhere (busy).
    for (const [i, id] of ids.entries()) {
      if (i % 4 === 0) await adapters.store.createThread(row(id));
      if (i % 8 === 1) await adapters.lease.acquire(id, "elsewhere", 10_000);
    }
    const user = (i: number) => ({ id: `u${i}`, role: "user" as const, content: `question ${i}` });
    logged.length = 0;
    const claims = await Promise.all(ids.map((id, i) => adapters.store.claimThread(row(id), claim(`h${i}`), { run: run(`b-run-${id}`, id), messages: [user(i)] })));
    for (const [i, c] of claims.entries()) {
      expect(c.row.thread_id).toBe(ids[i]);
      expect(c.created).toBe(i % 4 !== 0);
      expect(c.lease === null).toBe(i % 8 === 1);
      expect(c.started).toBe(i % 4 !== 0 && i % 8 !== 1);
      if (c.lease) expect(c.lease).toMatchObject({ threadId: ids[i], holder: `h${i}` });
    }
    const generations = claims.flatMap((c) => (c.lease ? [c.lease.generation] : []));
    expect(new Set(generations).size).toBe(generations.length);

    // Finish every started run at once; a third of them with a stale generation are refused.
    const started = claims.flatMap((c, i) => (c.started ? [{ i, lease: c.lease! }] : []));
    const outcomes = await Promise.allSettled(
      started.map(({ i, lease }) =>
        adapters.store.finishRun(`b-run-${ids[i]}`, end("ok", 5), { messages: [{ id: `a${i}`, role: "assistant", content: `answer ${i}` }], at: at(5) },
          i % 3 === 0 ? { ...lease, generation: lease.generation + 100_000 } : lease, adapters.lease),
      ),
    );
    for (const [k, { i }] of started.entries()) {
      const id = ids[i]!;
      const stale = i % 3 === 0;
      expect(outcomes[k]!.status).toBe(stale ? "rejected" : "fulfilled");
      const answer = { id: `a${i}`, role: "assistant", content: `answer ${i}` };
      expect(await adapters.store.getMessages(id)).toEqual(stale ? [user(i)] : [user(i), answer]);
      const record = await adapters.store.getRun(`b-run-${id}`);
      expect(record).toMatchObject(stale ? { status: "running", ended_at: null } : { status: "ok", ended_at: at(5), latency_ms: 7, usage: { input_tokens: 3, output_tokens: 4 } });
      expect((await adapters.store.getThread(id))!.updated_at).toBe(stale ? at(0) : at(5));
      expect(await adapters.lease.isHeld(id)).toBe(stale); // a stale handle releases nothing
    }
    for (const [i, id] of ids.entries()) if (!claims[i]!.started) expect(await adapters.store.listRuns(id)).toEqual([]);
    // The rows above went in batches of several, and no batch fell back to one call at a time.
    const batches = logged.filter((l) => l.message === "batched write");
    expect(Math.max(...batches.map((b) => b.claims!))).toBeGreaterThan(1);
    expect(Math.max(...batches.map((b) => b.finishes!))).toBeGreaterThan(1);
    expect(logged.filter((l) => l.message.includes("one by one"))).toEqual([]);
  });

  it("claims and finishes arriving together share one statement, and each still gets its own outcome", async () => {
    const earlier = Array.from({ length: 20 }, (_, i) => `mixed-old-${i}-${crypto.randomUUID()}`);
    const later = Array.from({ length: 20 }, (_, i) => `mixed-new-${i}-${crypto.randomUUID()}`);
    const user = (id: string) => ({ id: `u-${id}`, role: "user" as const, content: `question ${id}` });
    const answer = (id: string) => ({ id: `a-${id}`, role: "assistant" as const, content: `answer ${id}` });
    const claims = await Promise.all(earlier.map((id) => adapters.store.claimThread(row(id), claim("h"), { run: run(`m-run-${id}`, id), messages: [user(id)] })));
    logged.length = 0;
    // A stale generation on every fifth finish: refused, while the rest of its statement lands.
    const finishes = earlier.map((id, i) => {
      const lease = claims[i]!.lease!;
      return adapters.store.finishRun(`m-run-${id}`, end("ok", 5), { messages: [answer(id)], at: at(5) },
        i % 5 === 0 ? { ...lease, generation: lease.generation + 100_000 } : lease, adapters.lease);
    });
    const starts = later.map((id) => adapters.store.claimThread(row(id), claim("h2"), { run: run(`m-run-${id}`, id), messages: [user(id)] }));
    const [ended, started] = await Promise.all([Promise.allSettled(finishes), Promise.all(starts)]);

    expect(logged.some((l) => l.message === "batched write" && l.claims! > 0 && l.finishes! > 0)).toBe(true);
    expect(logged.filter((l) => l.message.includes("one by one"))).toEqual([]);
    for (const [i, id] of earlier.entries()) {
      const stale = i % 5 === 0;
      expect(ended[i]!.status).toBe(stale ? "rejected" : "fulfilled");
      expect(await adapters.store.getMessages(id)).toEqual(stale ? [user(id)] : [user(id), answer(id)]);
      expect(await adapters.store.getRun(`m-run-${id}`)).toMatchObject(stale ? { status: "running" } : { status: "ok", ended_at: at(5) });
      expect(await adapters.lease.isHeld(id)).toBe(stale);
    }
    for (const [i, id] of later.entries()) {
      expect(started[i]).toMatchObject({ created: true, started: true, row: { thread_id: id, owner: "o", actor: null, created_at: at(0) } });
      expect(started[i]!.lease).toMatchObject({ threadId: id, holder: "h2" });
      expect(await adapters.store.getMessages(id)).toEqual([user(id)]);
      expect(await adapters.store.getRun(`m-run-${id}`)).toMatchObject({ status: "running" });
    }
  });
});

describe("postgres: the lease table under churn, and how rows are found", () => {
  const own = `contract_scan_${process.pid}_${Date.now().toString(36)}`;
  const admin = postgres(TEST_DSN, { max: 1, onnotice: () => {}, connection: { search_path: own } });
  afterAll(async () => {
    await admin.end();
    await dropSchemas([own]);
  });
  const at = new Date(Date.UTC(2026, 0, 1)).toISOString();
  const row = (id: string) => ({ thread_id: id, owner: "o", actor: null, created_at: at, updated_at: at });
  const run = (runId: string, threadId: string) => ({
    run_id: runId, thread_id: threadId, status: "running" as const, error_type: null, error_id: null, principal_hash: "o", actor: null,
    metadata: {}, usage: { input_tokens: 0, output_tokens: 0 }, created_at: at, updated_at: at, ended_at: null, latency_ms: null,
    resumed_from: null, resumed_by: null,
  });
  const end = { status: "ok" as const, error_type: null, error_id: null, usage: { input_tokens: 1, output_tokens: 1 }, updated_at: at, ended_at: at, latency_ms: 1 };

  it("a released lease stays as an expired row (no dead row per chat) and goes with its thread", async () => {
    const h = await openPostgres({ dsn: TEST_DSN, min: 1, max: 4, schema: own, logger: createLogger({ level: "ERROR", format: "json", write: () => {} }), onHealth: () => {} });
    try {
      const lease = (await h.lease.acquire("kept", "h", 10_000))!;
      await h.lease.release(lease);
      expect(await h.lease.isHeld("kept")).toBe(false);
      expect(await admin`SELECT holder, expires_at < now() AS expired FROM leases WHERE thread_id = 'kept'`).toEqual([{ holder: "h", expired: true }]);
      const again = (await h.lease.acquire("kept", "h2", 10_000))!;
      expect(again.generation).toBeGreaterThan(lease.generation);

      await h.store.createThread(row("gone"));
      const held = (await h.lease.acquire("gone", "h", 10_000))!;
      expect(await h.store.deleteThread("gone")).toBe(true);
      await h.lease.release(held);
      expect(await admin`SELECT thread_id FROM leases WHERE thread_id = 'gone'`).toEqual([]);
    } finally {
      await h.store.close();
    }
  });

  it("chats batched on tables the planner has never analyzed find their rows by key: no table scan of threads, runs or leases", async () => {
    const h = await openPostgres({ dsn: TEST_DSN, min: 1, max: 10, schema: own, logger: createLogger({ level: "ERROR", format: "json", write: () => {} }), onHealth: () => {} });
    const before = await admin`SELECT relname, seq_scan FROM pg_stat_user_tables WHERE schemaname = ${own}`;
    try {
      for (let round = 0; round < 3; round++) {
        const ids = Array.from({ length: 30 }, (_, i) => `scan-${round}-${i}`);
        const claims = await Promise.all(ids.map((id) => h.store.claimThread(row(id), { port: h.lease, holder: "h", ttlMs: 10_000 }, { run: run(`r-${id}`, id), messages: [{ id: "u", role: "user", content: "q" }] })));
        await Promise.all(claims.map((c, i) => h.store.finishRun(`r-${ids[i]}`, end, { messages: [{ id: "a", role: "assistant", content: "a" }], at }, c.lease!, h.lease)));
      }
    } finally {
      await h.store.close(); // its backends exit and report their counters
    }
    const scans = async () => {
      const rows = await admin`SELECT relname, seq_scan, n_tup_ins FROM pg_stat_user_tables WHERE schemaname = ${own} AND relname IN ('threads', 'runs', 'leases')`;
      return Object.fromEntries(rows.map((r) => [r.relname, { seq: Number(r.seq_scan) - Number(before.find((b) => b.relname === r.relname)?.seq_scan ?? 0), ins: Number(r.n_tup_ins) }]));
    };
    let seen = await scans();
    for (let i = 0; i < 50 && (seen.runs?.ins ?? 0) < 90; i++) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await scans();
    }
    expect(seen.runs!.ins).toBe(90);
    expect({ threads: seen.threads!.seq, runs: seen.runs!.seq, leases: seen.leases!.seq }).toEqual({ threads: 0, runs: 0, leases: 0 });
  });
});

describe("postgres: rows and columns of other versions", () => {
  const db = scratchDatabase();
  afterAll(() => db.cleanup());
  const at = new Date(Date.UTC(2026, 0, 1)).toISOString().replace("Z", "+00:00");
  const row = (id: string) => ({ thread_id: id, owner: "o", actor: null, created_at: at, updated_at: at });
  const run = (runId: string, threadId: string) => ({
    run_id: runId, thread_id: threadId, status: "running" as const, error_type: null, error_id: null, principal_hash: "o", actor: null,
    metadata: {}, usage: { input_tokens: 0, output_tokens: 0 }, created_at: at, updated_at: at, ended_at: null, latency_ms: null,
    resumed_from: null, resumed_by: null,
  });

  it("an approval written before `outcome` existed reads outcome null, and takes one later", async () => {
    const schema = db.fresh();
    const h = await db.handle(schema);
    const admin = db.admin(schema);
    await h.store.createThread(row("t"));
    const approval = {
      approval_id: "ap-old", thread_id: "t", run_id: "r", status: "pending" as const, api: "orders", method: "POST", path: "/orders",
      operation_id: null, rpc_method: null, a2a_operation: null, query: null, body: null, tool: "t", reason: "r", approvers: ["requester"],
      requester: "o", requester_actor: null, decide_with: "direct" as const, relayers: [], decided_by: null, decided_via: null, digest: "sha256:00",
      nested: null, effect: null, created_at: at, expires_at: at, decided_at: null, comment: null, outcome: null,
      internal: {
        tool_call_id: "call_1", gate_key: "k", call: { query: [], body: undefined },
        requester_principal: { id: "o", roles: [], attributes: {}, actor: null }, executed_at: null, result: null,
      },
    };
    await h.store.createApproval(approval);
    await admin`UPDATE approvals SET shown = shown - 'outcome' WHERE approval_id = 'ap-old'`;
    expect(await admin`SELECT shown ? 'outcome' AS has FROM approvals`).toEqual([{ has: false }]);
    expect((await h.store.getApproval("ap-old"))!.outcome).toBeNull();
    expect((await h.store.threadBlockers("t")).pending.map((a) => a.outcome)).toEqual([null]);
    expect((await h.store.findApproval("t", "call_1", "sha256:00"))!.outcome).toBeNull();
    await h.store.markOutcomeUnknown("ap-old");
    expect((await h.store.getApproval("ap-old"))!.outcome).toBe("unknown");
  });

  it("a run column a later version added keeps its default through claimThread, createRun and finishRun", async () => {
    const schema = db.fresh();
    const h = await db.handle(schema);
    const admin = db.admin(schema);
    await h.store.ping(); // makes the schema
    await admin`ALTER TABLE runs ADD COLUMN later text NOT NULL DEFAULT 'kept'`;
    const claimed = await h.store.claimThread(row("t"), { port: h.lease, holder: "h", ttlMs: 10_000 }, { run: run("r1", "t"), messages: [] });
    expect(claimed.started).toBe(true);
    await h.store.createRun(run("r2", "t"), { messages: [{ id: "m", role: "user", content: "q" }], at, fence: claimed.lease! });
    await h.store.finishRun("r1", { status: "ok", error_type: null, error_id: null, usage: { input_tokens: 1, output_tokens: 1 }, updated_at: at, ended_at: at, latency_ms: 1 },
      { messages: [], at }, claimed.lease!, h.lease);
    expect(await admin`SELECT run_id, later FROM runs ORDER BY run_id`).toEqual([{ run_id: "r1", later: "kept" }, { run_id: "r2", later: "kept" }]);
    expect((await h.store.getRun("r1"))!.status).toBe("ok");
  });
});

describe("postgres: reads served by their indexes", () => {
  // A server (or pooler) may plan prepared statements once for all values
  // (plan_cache_mode=force_generic_plan); enable_seqscan=off keeps the tiny tables here from a
  // plain scan. Which index served is read from pg_stat_user_indexes, which a connection fills at
  // the end of a statement at least a second after it last did (else within about 10 s of going
  // idle): so one more statement is sent a second after the reads.
  const schemaName = `indexed_${process.pid}_${Date.now().toString(36)}`;
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString().replace("Z", "+00:00");
  let h: Awaited<ReturnType<typeof openPostgres>>;
  let admin: postgres.Sql;
  beforeAll(async () => {
    const url = new URL(TEST_DSN);
    url.searchParams.set("plan_cache_mode", "force_generic_plan");
    url.searchParams.set("enable_seqscan", "off");
    h = await openPostgres({ dsn: url.toString(), min: 1, max: 1, schema: schemaName, logger, onHealth: () => {} });
    admin = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await admin?.end();
    await h?.store.close();
    await dropSchemas([schemaName]);
  });

  /** Index scans of `table`'s indexes, once they count at least `least` on `index`. */
  async function scansOnceCounted(table: string, index: string, least: number): Promise<Record<string, number>> {
    await new Promise((r) => setTimeout(r, 1100));
    await h.store.ping();
    const scans = async () =>
      Object.fromEntries(
        (await admin`SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE schemaname = ${schemaName} AND relname = ${table}`).map((r) => [r.indexrelname, Number(r.idx_scan)]),
      );
    let seen = await scans();
    for (const until = Date.now() + 30_000; (seen[index] ?? 0) < least && Date.now() < until; seen = await scans()) await new Promise((r) => setTimeout(r, 250));
    return seen;
  }

  // A filter written `($1 IS NULL OR owner = $1)` could not use the owner's index in a generic
  // plan, and read every thread through threads_updated instead.
  it("lists a caller's threads through the owner's index, even under generic plans", { timeout: 40_000 }, async () => {
    for (let i = 0; i < 6; i++)
      await h.store.createThread({ thread_id: `g${i}`, owner: i % 3 === 0 ? "alice" : "bob", actor: null, created_at: at(i), updated_at: at(i) });
    for (let i = 0; i < 3; i++) {
      const listed = await h.store.listThreads({ owner: "alice", limit: 20, offset: 0 });
      expect(listed.map((t) => t.thread_id)).toEqual(["g3", "g0"]);
    }
    const seen = await scansOnceCounted("threads", "threads_owner_updated", 3);
    expect(seen.threads_owner_updated).toBeGreaterThanOrEqual(3);
    expect(seen.threads_updated).toBe(0);
  });

  // The settling sweep runs every 30 s; finished tasks are kept for A2A_TASK_TTL_S.
  it("finds stranded tasks among the tasks not finished only (a2a_tasks_open)", { timeout: 40_000 }, async () => {
    await h.store.createThread({ thread_id: "s", owner: "alice", actor: null, created_at: at(0), updated_at: at(0) });
    const task = (id: string, state: TaskState, approvalIds: string[]): TaskRecord => ({
      task_id: id, context_id: "s", owner: "alice", actor: null, state, status_parts: [], artifacts: [], approval_ids: approvalIds,
      run_id: null, instance_id: null, created_at: at(1), updated_at: at(1),
    });
    for (let i = 0; i < 5; i++) await h.store.createTask(task(`done-${i}`, "completed", []) );
    await h.store.createTask(task("waiting", "input-required", ["gone"]));
    const stranded = await h.store.strandedTasks(at(100), 10);
    expect(stranded.map((t) => t.task_id)).toEqual(["waiting"]);
    const seen = await scansOnceCounted("a2a_tasks", "a2a_tasks_open", 1);
    expect(seen.a2a_tasks_open).toBeGreaterThanOrEqual(1);
  });

  // GET /approvals for a caller who may not read across: its own requests, and with roles those
  // its roles approve. Without indexes for them, every approval kept was read.
  it("lists the approvals a caller may see through approvals_requester, and approvals_approvers for its roles", { timeout: 40_000 }, async () => {
    await h.store.createThread({ thread_id: "ap", owner: "alice", actor: null, created_at: at(0), updated_at: at(0) });
    await h.store.createApproval(approvalRecord("ap-1", "ap", "alice", at(1)));
    await h.store.createApproval(approvalRecord("ap-2", "ap", "bob", at(2), { approvers: ["role:ops"] }));
    await h.store.createApproval(approvalRecord("ap-3", "ap", "bob", at(3)));
    const ids = async (roles: string[]) =>
      (await h.store.listApprovals({ visibleTo: { requester: "alice", roles }, limit: 20, offset: 0 })).map((a) => a.approval_id);
    expect(await ids([])).toEqual(["ap-1"]);
    expect(await ids(["ops"])).toEqual(["ap-2", "ap-1"]);
    const seen = await scansOnceCounted("approvals", "approvals_approvers", 1);
    expect(seen.approvals_requester).toBeGreaterThanOrEqual(2);
    expect(seen.approvals_approvers).toBeGreaterThanOrEqual(1);
  });

  // The task retention job runs every minute (at most) on every replica.
  it("drops the tasks past their time through a2a_tasks_updated, not by reading every task", { timeout: 40_000 }, async () => {
    await h.store.createThread({ thread_id: "r", owner: "alice", actor: null, created_at: at(0), updated_at: at(0) });
    const task = (id: string, updatedAt: string): TaskRecord => ({
      task_id: id, context_id: "r", owner: "alice", actor: null, state: "completed", status_parts: [], artifacts: [], approval_ids: [],
      run_id: null, instance_id: null, created_at: at(0), updated_at: updatedAt,
    });
    await h.store.createTask(task("old", at(10)));
    await h.store.createTask(task("new", at(30)));
    expect(await h.store.dropTasksBefore(at(20))).toBeGreaterThanOrEqual(1);
    expect(await h.store.getTask("old")).toBeNull();
    expect(await h.store.getTask("new")).not.toBeNull();
    const seen = await scansOnceCounted("a2a_tasks", "a2a_tasks_updated", 1);
    expect(seen.a2a_tasks_updated).toBeGreaterThanOrEqual(1);
  });
});
