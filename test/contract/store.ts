/**
 * The Store contract (src/store/ports.ts), as a suite every adapter runs: every method of the
 * port, each against every adapter. Each test uses ids of its own (a random tag), so an adapter
 * backed by a shared database can run it without truncating between tests; the few queries that
 * read across threads (idleThreads, dueRuns, dropTasksBefore) are checked on records dated long
 * before any other test's.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isoTime } from "../../src/clock.js";
import type { ApprovalRecord } from "../../src/store/records/approval.js";
import type { TaskRecord } from "../../src/store/records/task.js";
import { approvalRecord, runRecord } from "../support/records.js";
import type { LeaseClaim, Message, RunEnd, RunRecord, Store, TaskCursor, ThreadLease, ThreadRow } from "../../src/store/ports.js";

export interface StoreFixture {
  store: Store;
  /**
   * The lease port claimThread and finishRun are given, and the suite reads and takes leases
   * through (an adapter whose leases live in its own database ignores it in claimThread).
   */
  lease: ThreadLease;
  /** A store of its own, on the same data where the adapter has any, that the test closes. */
  spare(): Promise<Store>;
  cleanup?: () => Promise<void>;
}

export interface StoreTraits {
  /**
   * Several processes share the adapter: fenced writes are refused once the lease moved on, and
   * markLostRuns has other processes' runs to look at. An in-process adapter does neither.
   */
  readonly sharedByProcesses: boolean;
}

const BASE = Date.UTC(2024, 0, 1, 12, 0, 0);
const at = (seconds: number) => isoTime(BASE + seconds * 1000);
/** Older than any other test's records: queries across threads see only this test's among the oldest. */
const ancient = (seconds: number) => isoTime(Date.UTC(2000, 0, 1) + seconds * 1000);
const TTL = 10_000;

export function describeStoreContract(name: string, make: () => Promise<StoreFixture>, traits: StoreTraits): void {
  describe(`${name}: Store contract`, () => {
    let fixture: StoreFixture;
    let store: Store;
    let lease: ThreadLease;
    let tag: string;

    beforeEach(async () => {
      fixture = await make();
      store = fixture.store;
      lease = fixture.lease;
      tag = `c${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    });
    afterEach(async () => {
      await fixture.cleanup?.();
    });

    const thread = (suffix: string, fields: Partial<ThreadRow> = {}): ThreadRow => ({
      thread_id: `${tag}-${suffix}`,
      owner: `${tag}-owner`,
      actor: null,
      created_at: at(0),
      updated_at: at(0),
      ...fields,
    });

    const run = (runSuffix: string, threadId: string, fields: Partial<RunRecord> = {}): RunRecord => runRecord(`${tag}-run-${runSuffix}`, threadId, at(1), fields);

    const approval = (suffix: string, threadId: string, fields: Partial<ApprovalRecord> = {}, toolCallId = "call_1"): ApprovalRecord =>
      approvalRecord(`${tag}-ap-${suffix}`, threadId, `${tag}-owner`, at(1), {
        run_id: `${tag}-run-1`,
        query: { a: "1" },
        approvers: ["requester", "role:admin"],
        expires_at: at(100),
        internal: {
          tool_call_id: toolCallId,
          gate_key: "k",
          call: { query: [["a", "1"]], body: { item: "x", card: "secret" } },
          requester_principal: { id: "alice", roles: [], attributes: {}, actor: null },
          executed_at: null,
          result: null,
        },
        ...fields,
      });
    const decision = { status: "approved" as const, decided_by: "d", decided_via: null, decided_at: at(2), comment: "ok", dropCall: true };
    const decided = (status: "approved" | "rejected" | "expired") => ({ ...decision, status });

    const task = (suffix: string, contextId: string, fields: Partial<TaskRecord> = {}): TaskRecord => ({
      task_id: `${tag}-task-${suffix}`,
      context_id: contextId,
      owner: `${tag}-owner`,
      actor: null,
      state: "working",
      status_parts: [],
      artifacts: [],
      approval_ids: [],
      run_id: null,
      instance_id: null,
      created_at: at(1),
      updated_at: at(1),
      ...fields,
    });

    const claim = (holder: string, ttlMs = TTL): LeaseClaim => ({ port: lease, holder, ttlMs });
    const end = (status: RunEnd["status"], s: number, fields: Partial<RunEnd> = {}): RunEnd => ({
      status,
      error_type: null,
      error_id: null,
      usage: { input_tokens: 3, output_tokens: 4 },
      updated_at: at(s),
      ended_at: at(s),
      latency_ms: 7,
      ...fields,
    });
    const leaseLost = { code: "lease_lost" };
    const ids = (rows: readonly { run_id: string }[]) => rows.map((r) => r.run_id);
    /** Only this test's rows, of a query that reads across threads. */
    const ofTag = <T extends { thread_id: string }>(rows: readonly T[]) => rows.filter((r) => r.thread_id.startsWith(`${tag}-`));

    let messageSeq = 0;
    const mid = () => `${tag}-msg-${String(++messageSeq).padStart(4, "0")}`;

    describe("threads", () => {
      it("creates a thread and reads it back", async () => {
        const row = thread("a", { actor: "agent-7", created_at: at(1), updated_at: at(2) });
        expect(await store.getThread(row.thread_id)).toBeNull();
        const result = await store.createThread(row);
        expect(result).toEqual({ created: true, row });
        expect(await store.getThread(row.thread_id)).toEqual(row);
      });

      it("keeps the stored row when the id exists", async () => {
        const first = thread("a", { owner: `${tag}-first` });
        await store.createThread(first);
        const second = await store.createThread(thread("a", { owner: `${tag}-second`, actor: "agent-x", updated_at: at(9) }));
        expect(second).toEqual({ created: false, row: first });
        expect(await store.getThread(first.thread_id)).toEqual(first);
      });

      it("is atomic under 20 concurrent creates with one id", async () => {
        const rows = Array.from({ length: 20 }, (_, i) => thread("race", { owner: `${tag}-owner-${i}` }));
        const results = await Promise.all(rows.map((r) => store.createThread(r)));
        const winners = results.filter((r) => r.created);
        expect(winners).toHaveLength(1);
        const stored = await store.getThread(rows[0]!.thread_id);
        expect(stored).not.toBeNull();
        expect(rows).toContainEqual(stored);
        expect(winners[0]!.row).toEqual(stored);
        for (const r of results) expect(r.row).toEqual(stored);
        const listed = await store.listThreads({ owner: stored!.owner, limit: 100, offset: 0 });
        expect(listed.filter((t) => t.thread_id === stored!.thread_id)).toHaveLength(1);
      });

      it("returns null for an unknown thread", async () => {
        expect(await store.getThread(`${tag}-missing`)).toBeNull();
      });
    });

    describe("listThreads", () => {
      it("orders by updated_at, most recent first, ties by id", async () => {
        const rows = [
          thread("b", { updated_at: at(20) }),
          thread("d", { updated_at: at(10) }),
          thread("a", { updated_at: at(20) }),
          thread("c", { updated_at: at(30) }),
          thread("e", { updated_at: at(5) }),
        ];
        for (const r of rows) await store.createThread(r);
        const listed = await store.listThreads({ owner: `${tag}-owner`, limit: 100, offset: 0 });
        expect(listed.map((t) => t.thread_id)).toEqual(["c", "a", "b", "d", "e"].map((s) => `${tag}-${s}`));
        expect(listed).toContainEqual(rows[0]);
      });

      it("filters by owner, and by actor within an owner", async () => {
        const alice = `${tag}-alice`;
        const bob = `${tag}-bob`;
        await store.createThread(thread("a1", { owner: alice, updated_at: at(3) }));
        await store.createThread(thread("a2", { owner: alice, actor: "agent-x", updated_at: at(2) }));
        await store.createThread(thread("a3", { owner: alice, actor: "agent-y", updated_at: at(1) }));
        await store.createThread(thread("b1", { owner: bob, actor: "agent-x", updated_at: at(4) }));

        const ids = (rows: ThreadRow[]) => rows.map((r) => r.thread_id);
        expect(ids(await store.listThreads({ owner: alice, limit: 100, offset: 0 }))).toEqual([`${tag}-a1`, `${tag}-a2`, `${tag}-a3`]);
        expect(ids(await store.listThreads({ owner: bob, limit: 100, offset: 0 }))).toEqual([`${tag}-b1`]);
        expect(ids(await store.listThreads({ owner: alice, actor: "agent-x", limit: 100, offset: 0 }))).toEqual([`${tag}-a2`]);
        expect(await store.listThreads({ owner: alice, actor: "agent-z", limit: 100, offset: 0 })).toEqual([]);
        expect(await store.listThreads({ owner: `${tag}-nobody`, limit: 100, offset: 0 })).toEqual([]);

        // Without an owner every owner is listed (read-across), in the same order.
        const all = ids(await store.listThreads({ limit: 10_000, offset: 0 })).filter((id) => id.startsWith(`${tag}-`));
        expect(all).toEqual([`${tag}-b1`, `${tag}-a1`, `${tag}-a2`, `${tag}-a3`]);
      });

      it("pages with limit and offset", async () => {
        for (let i = 0; i < 5; i++) await store.createThread(thread(`p${i}`, { updated_at: at(100 - i) }));
        const page = (limit: number, offset: number) =>
          store.listThreads({ owner: `${tag}-owner`, limit, offset }).then((rows) => rows.map((r) => r.thread_id.slice(tag.length + 1)));
        expect(await page(2, 0)).toEqual(["p0", "p1"]);
        expect(await page(2, 2)).toEqual(["p2", "p3"]);
        expect(await page(2, 4)).toEqual(["p4"]);
        expect(await page(2, 5)).toEqual([]);
        expect(await page(10, 1)).toEqual(["p1", "p2", "p3", "p4"]);
        expect(await page(0, 0)).toEqual([]);
      });
    });

    describe("idleThreads", () => {
      it("lists the threads not updated since `before`, oldest first, up to the limit", async () => {
        const rows = [
          thread("i1", { created_at: ancient(0), updated_at: ancient(3) }),
          thread("i2", { created_at: ancient(0), updated_at: ancient(1) }),
          thread("i3", { created_at: ancient(0), updated_at: ancient(2) }),
          thread("i4", { created_at: ancient(0), updated_at: ancient(5) }), // at `before` itself: not idle
          thread("i5", { created_at: ancient(0), updated_at: ancient(0) }), // written to since: not idle
        ];
        for (const r of rows) await store.createThread(r);
        await store.appendMessages(`${tag}-i5`, [{ id: mid(), role: "user", content: "still here" }], at(50));
        const idle = (limit: number) => store.idleThreads(ancient(5), limit).then((found) => found.map((id) => id.slice(tag.length + 1)));
        expect(await idle(100)).toEqual(["i2", "i3", "i1"]);
        expect(await idle(2)).toEqual(["i2", "i3"]);
        expect(await idle(0)).toEqual([]);
        expect(await store.idleThreads(ancient(1), 100)).toEqual([]);
      });
    });

    describe("messages", () => {
      it("appends in order across calls and reads them back", async () => {
        const row = thread("m");
        await store.createThread(row);
        const first: Message[] = [
          { id: mid(), role: "user", content: "What is 2 + 2? 😀" },
          {
            id: mid(),
            role: "assistant",
            content: "",
            tool_calls: [{ id: "call_1", name: "calculator", args: { expression: "2 + 2", nested: { list: [1, "x", null] } } }],
          },
        ];
        const second: Message[] = [
          { id: mid(), role: "tool", content: "4", tool_call_id: "call_1", name: "calculator", is_error: false },
          { id: mid(), role: "tool", content: "The tool failed.", tool_call_id: "call_2", name: "x", is_error: true, error_id: "0123456789abcdef" },
          { id: mid(), role: "assistant", content: "It is 4." },
        ];
        await store.appendMessages(row.thread_id, first, at(5));
        await store.appendMessages(row.thread_id, second, at(6));
        expect(await store.getMessages(row.thread_id)).toEqual([...first, ...second]);
      });

      it("bumps updated_at, which moves the thread up the list", async () => {
        const older = thread("old", { updated_at: at(1) });
        const newer = thread("new", { updated_at: at(2) });
        await store.createThread(older);
        await store.createThread(newer);
        await store.appendMessages(older.thread_id, [{ id: mid(), role: "user", content: "hi" }], at(50));
        const got = await store.getThread(older.thread_id);
        expect(got).toEqual({ ...older, updated_at: at(50) });
        const listed = await store.listThreads({ owner: `${tag}-owner`, limit: 10, offset: 0 });
        expect(listed.map((t) => t.thread_id)).toEqual([older.thread_id, newer.thread_id]);
      });

      it("keeps each thread's messages apart, and returns [] for a thread without any", async () => {
        const a = thread("a");
        const b = thread("b");
        await store.createThread(a);
        await store.createThread(b);
        const ma: Message = { id: mid(), role: "user", content: "for a" };
        await store.appendMessages(a.thread_id, [ma], at(3));
        expect(await store.getMessages(a.thread_id)).toEqual([ma]);
        expect(await store.getMessages(b.thread_id)).toEqual([]);
        expect(await store.getMessages(`${tag}-missing`)).toEqual([]);
      });

      it("writes under a fence while that lease holds the thread", async () => {
        const row = thread("fenced");
        await store.createThread(row);
        const handle = (await lease.acquire(row.thread_id, "h", TTL))!;
        const m: Message = { id: mid(), role: "user", content: "fenced" };
        await store.appendMessages(row.thread_id, [m], at(7), handle);
        expect(await store.getMessages(row.thread_id)).toEqual([m]);
        expect((await store.getThread(row.thread_id))!.updated_at).toBe(at(7));
      });

      it.runIf(traits.sharedByProcesses)("shared by processes: refuses a fenced write once the lease moved on, writing nothing", async () => {
        const row = thread("stale");
        await store.createThread(row);
        const old = (await lease.acquire(row.thread_id, "old", TTL))!;
        await lease.release(old);
        const next = (await lease.acquire(row.thread_id, "next", TTL))!;
        await expect(store.appendMessages(row.thread_id, [{ id: mid(), role: "user", content: "late" }], at(7), old)).rejects.toMatchObject(leaseLost);
        await expect(
          store.createRun(run("late", row.thread_id), { messages: [{ id: mid(), role: "user", content: "late" }], at: at(8), fence: old }),
        ).rejects.toMatchObject(leaseLost);
        expect(await store.getMessages(row.thread_id)).toEqual([]);
        expect(await store.getRun("late")).toBeNull();
        expect(await store.getThread(row.thread_id)).toEqual(row);
        expect(await lease.renew(next, TTL)).toBe(true);
      });

      it("pages: the newest, those before or after a message named by id, in thread order; null for an anchor not in the thread", async () => {
        const row = thread("paged");
        const other = thread("paged-other");
        await store.createThread(row);
        await store.createThread(other);
        const ms: Message[] = Array.from({ length: 12 }, (_, i) => ({ id: mid(), role: i % 2 === 0 ? "user" : "assistant", content: `m${i} ${"é".repeat(i)}` }) as Message);
        await store.appendMessages(row.thread_id, ms.slice(0, 5), at(3));
        await store.appendMessages(row.thread_id, ms.slice(5), at(4));
        const foreign: Message = { id: mid(), role: "user", content: "elsewhere" };
        await store.appendMessages(other.thread_id, [foreign], at(5));
        const page = (p: { limit: number; before?: string; after?: string }) => store.getMessagePage(row.thread_id, p);
        expect(await page({ limit: 3 })).toEqual(ms.slice(9));
        expect(await page({ limit: 50 })).toEqual(ms);
        expect(await page({ limit: 4, before: ms[9]!.id })).toEqual(ms.slice(5, 9));
        expect(await page({ limit: 4, before: ms[2]!.id })).toEqual(ms.slice(0, 2));
        expect(await page({ limit: 4, before: ms[0]!.id })).toEqual([]);
        expect(await page({ limit: 4, after: ms[3]!.id })).toEqual(ms.slice(4, 8));
        expect(await page({ limit: 4, after: ms[10]!.id })).toEqual(ms.slice(11));
        expect(await page({ limit: 4, after: ms[11]!.id })).toEqual([]);
        expect(await page({ limit: 4, before: foreign.id })).toBeNull();
        expect(await page({ limit: 4, after: "no-such-message" })).toBeNull();
        expect(await store.getMessagePage(`${tag}-missing`, { limit: 5 })).toEqual([]);
      });

      it("returns a copy: changing the result does not change the store", async () => {
        const row = thread("copy");
        await store.createThread(row);
        const m: Message = { id: mid(), role: "user", content: "x" };
        await store.appendMessages(row.thread_id, [m], at(3));
        const got = await store.getMessages(row.thread_id);
        got.push({ id: mid(), role: "user", content: "injected" });
        expect(await store.getMessages(row.thread_id)).toEqual([m]);
      });
    });

    describe("runs", () => {
      it("creates, reads and patches a run", async () => {
        const row = thread("r");
        await store.createThread(row);
        const record = run("1", row.thread_id, { actor: "agent-x", metadata: { source: "test", n: 3, ok: true, none: null } });
        await store.createRun(record);
        expect(await store.getRun(record.run_id)).toEqual(record);

        await store.updateRun(record.run_id, {
          status: "error",
          error_type: "ModelError",
          error_id: "fedcba9876543210",
          usage: { input_tokens: 12, output_tokens: 7 },
          updated_at: at(9),
          ended_at: at(9),
          latency_ms: 8000,
        });
        expect(await store.getRun(record.run_id)).toEqual({
          ...record,
          status: "error",
          error_type: "ModelError",
          error_id: "fedcba9876543210",
          usage: { input_tokens: 12, output_tokens: 7 },
          updated_at: at(9),
          ended_at: at(9),
          latency_ms: 8000,
        });

        await store.updateRun(record.run_id, { status: "ok" });
        const after = await store.getRun(record.run_id);
        expect(after?.status).toBe("ok");
        expect(after?.error_type).toBe("ModelError");
        expect(after?.run_id).toBe(record.run_id);
        expect(after?.thread_id).toBe(row.thread_id);
      });

      it("createRun with messages writes the record and the messages, and bumps updated_at", async () => {
        const row = thread("ra");
        await store.createThread(row);
        const first = run("1", row.thread_id);
        const m1: Message = { id: mid(), role: "user", content: "one" };
        const m2: Message = { id: mid(), role: "assistant", content: "two" };
        await store.createRun(first, { messages: [m1, m2], at: at(7) });
        expect(await store.getRun(first.run_id)).toEqual(first);
        expect(await store.getMessages(row.thread_id)).toEqual([m1, m2]);
        expect(await store.getThread(row.thread_id)).toEqual({ ...row, updated_at: at(7) });

        // Under a fence that holds, the same.
        const handle = (await lease.acquire(row.thread_id, "h", TTL))!;
        const second = run("2", row.thread_id, { created_at: at(8), resumed_from: first.run_id });
        const m3: Message = { id: mid(), role: "user", content: "three" };
        await store.createRun(second, { messages: [m3], at: at(8), fence: handle });
        expect(await store.getRun(second.run_id)).toEqual(second);
        expect(await store.getMessages(row.thread_id)).toEqual([m1, m2, m3]);
        expect((await store.getThread(row.thread_id))!.updated_at).toBe(at(8));
      });

      it("returns null for an unknown run", async () => {
        expect(await store.getRun(`${tag}-run-missing`)).toBeNull();
      });

      it("lists the runs of one thread only", async () => {
        const a = thread("a");
        const b = thread("b");
        await store.createThread(a);
        await store.createThread(b);
        const r1 = run("1", a.thread_id, { created_at: at(1) });
        const r2 = run("2", a.thread_id, { created_at: at(2) });
        const r3 = run("3", b.thread_id, { created_at: at(3) });
        for (const r of [r1, r2, r3]) await store.createRun(r);
        await store.updateRun(r2.run_id, { status: "cancelled" });
        const byId = (rows: RunRecord[]) => [...rows].sort((x, y) => (x.run_id < y.run_id ? -1 : 1));
        expect(byId(await store.listRuns(a.thread_id))).toEqual([r1, { ...r2, status: "cancelled" }]);
        expect(await store.listRuns(b.thread_id)).toEqual([r3]);
        expect(await store.listRuns(`${tag}-missing`)).toEqual([]);
      });
    });

    describe("deleteThread", () => {
      it("removes the thread, its messages and its runs, and leaves others alone", async () => {
        const doomed = thread("doomed");
        const kept = thread("kept");
        await store.createThread(doomed);
        await store.createThread(kept);
        const m1: Message = { id: mid(), role: "user", content: "bye" };
        const m2: Message = { id: mid(), role: "user", content: "stay" };
        await store.appendMessages(doomed.thread_id, [m1], at(2));
        await store.appendMessages(kept.thread_id, [m2], at(2));
        const r1 = run("d", doomed.thread_id);
        const r2 = run("k", kept.thread_id);
        await store.createRun(r1);
        await store.createRun(r2);

        expect(await store.deleteThread(doomed.thread_id)).toBe(true);
        expect(await store.getThread(doomed.thread_id)).toBeNull();
        expect(await store.getMessages(doomed.thread_id)).toEqual([]);
        expect(await store.getRun(r1.run_id)).toBeNull();
        expect(await store.listRuns(doomed.thread_id)).toEqual([]);
        const listed = await store.listThreads({ owner: `${tag}-owner`, limit: 10, offset: 0 });
        expect(listed.map((t) => t.thread_id)).toEqual([kept.thread_id]);

        expect(await store.getThread(kept.thread_id)).toEqual({ ...kept, updated_at: at(2) });
        expect(await store.getMessages(kept.thread_id)).toEqual([m2]);
        expect(await store.getRun(r2.run_id)).toEqual(r2);
      });

      it("answers false for an unknown thread and for a second delete", async () => {
        expect(await store.deleteThread(`${tag}-missing`)).toBe(false);
        const row = thread("once");
        await store.createThread(row);
        expect(await store.deleteThread(row.thread_id)).toBe(true);
        expect(await store.deleteThread(row.thread_id)).toBe(false);
      });

      it("lets the id be created again afresh", async () => {
        const row = thread("again");
        await store.createThread(row);
        await store.appendMessages(row.thread_id, [{ id: mid(), role: "user", content: "old" }], at(4));
        await store.deleteThread(row.thread_id);
        const fresh = thread("again", { owner: `${tag}-other` });
        expect(await store.createThread(fresh)).toEqual({ created: true, row: fresh });
        expect(await store.getMessages(row.thread_id)).toEqual([]);
      });
    });

    describe("approvals", () => {
      it("creates, reads, lists newest first with filters and visibility", async () => {
        const row = thread("ap");
        await store.createThread(row);
        const first = approval("1", row.thread_id, { created_at: at(1) });
        await store.createApproval(first);
        await store.createApproval(approval("2", row.thread_id, { created_at: at(2), approvers: ["role:ops"], requester: "other", run_id: `${tag}-run-2` }));
        expect(await store.getApproval(first.approval_id)).toEqual(first);
        expect(await store.getApproval(`${tag}-ap-missing`)).toBeNull();
        const listed = (q: Partial<Parameters<Store["listApprovals"]>[0]>) =>
          store.listApprovals({ thread_id: row.thread_id, limit: 10, offset: 0, ...q }).then((rows) => rows.map((a) => a.approval_id));
        expect(await listed({})).toEqual([`${tag}-ap-2`, `${tag}-ap-1`]);
        expect(await listed({ visibleTo: { requester: `${tag}-owner`, roles: [] } })).toEqual([`${tag}-ap-1`]);
        expect(await listed({ visibleTo: { requester: "nobody", roles: ["ops"] } })).toEqual([`${tag}-ap-2`]);
        expect(await listed({ visibleTo: { requester: "nobody", roles: ["admin", "ops"] } })).toEqual([`${tag}-ap-2`, `${tag}-ap-1`]);
        expect(await listed({ visibleTo: { requester: "nobody", roles: ["other"] } })).toEqual([]);
        expect(await listed({ status: "approved" })).toEqual([]);
        expect(await listed({ status: "pending" })).toEqual([`${tag}-ap-2`, `${tag}-ap-1`]);
        expect(await listed({ run_id: `${tag}-run-2` })).toEqual([`${tag}-ap-2`]);
        expect(await listed({ limit: 1, offset: 1 })).toEqual([`${tag}-ap-1`]);
        expect(await listed({ thread_id: `${tag}-missing` })).toEqual([]);
      });

      it("filters by the agent a call was asked through before cutting the page (a delegated reader's pages are full)", async () => {
        const row = thread("ap-actor");
        await store.createThread(row);
        for (let i = 0; i < 6; i++)
          await store.createApproval(approval(`act-${i}`, row.thread_id, { created_at: at(i), requester_actor: i % 2 === 0 ? "agent-a" : null }));
        const page = (offset: number) =>
          store.listApprovals({ thread_id: row.thread_id, requester_actor: "agent-a", limit: 2, offset }).then((rows) => rows.map((a) => a.approval_id));
        expect(await page(0)).toEqual([`${tag}-ap-act-4`, `${tag}-ap-act-2`]);
        expect(await page(2)).toEqual([`${tag}-ap-act-0`]);
      });

      it("moves a pending approval to the run that waits on it now, and never a decided one", async () => {
        const row = thread("ap-move");
        await store.createThread(row);
        const a = approval("mv", row.thread_id, { run_id: `${tag}-run-first` });
        const b = approval("mv2", row.thread_id, { run_id: `${tag}-run-first` });
        await store.createApproval(a);
        await store.createApproval(b);
        await store.moveApproval(a.approval_id, `${tag}-run-second`);
        expect(await store.getApproval(a.approval_id)).toEqual({ ...a, run_id: `${tag}-run-second` });
        expect(await store.listApprovals({ run_id: `${tag}-run-second`, limit: 10, offset: 0 })).toEqual([{ ...a, run_id: `${tag}-run-second` }]);
        await store.decideApproval(b.approval_id, decision);
        await store.moveApproval(b.approval_id, `${tag}-run-second`);
        expect((await store.getApproval(b.approval_id))!.run_id).toBe(`${tag}-run-first`);
      });

      it("keeps the span of the run that waits on an approval in its internal part, replaced when it moves", async () => {
        const row = thread("ap-trace");
        await store.createThread(row);
        const first = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        const second = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        const base = approval("tr", row.thread_id, { run_id: `${tag}-run-first` });
        const a = { ...base, internal: { ...base.internal, run_trace: first } };
        await store.createApproval(a);
        expect((await store.getApproval(a.approval_id))!.internal.run_trace).toBe(first);
        await store.moveApproval(a.approval_id, `${tag}-run-second`);
        expect((await store.getApproval(a.approval_id))!.internal.run_trace).toBe(first);
        await store.moveApproval(a.approval_id, `${tag}-run-third`, second);
        expect(await store.getApproval(a.approval_id)).toEqual({ ...a, run_id: `${tag}-run-third`, internal: { ...a.internal, run_trace: second } });
      });

      it("records a decision once under 20 concurrent deciders, dropping the shown call when asked", async () => {
        const row = thread("ap2");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id));
        const results = await Promise.all(Array.from({ length: 20 }, () => store.decideApproval(`${tag}-ap-1`, decision)));
        expect(results.filter((r) => r !== null)).toHaveLength(1);
        const stored = (await store.getApproval(`${tag}-ap-1`))!;
        expect(stored).toMatchObject({ status: "approved", decided_by: "d", comment: "ok", query: null, body: null });
        expect(results.find((r) => r !== null)).toEqual(stored);
        expect(await store.decideApproval(`${tag}-ap-1`, { ...decision, status: "rejected" })).toBeNull();
        expect(await store.decideApproval(`${tag}-ap-missing`, decision)).toBeNull();
      });

      it("keeps the shown call when the decision does not drop it", async () => {
        const row = thread("ap2k");
        await store.createThread(row);
        const asked = approval("1", row.thread_id);
        await store.createApproval(asked);
        const got = await store.decideApproval(asked.approval_id, { ...decided("rejected"), dropCall: false });
        expect(got).toEqual({ ...asked, status: "rejected", decided_by: "d", decided_via: null, decided_at: at(2), comment: "ok" });
        expect(await store.getApproval(asked.approval_id)).toEqual(got);
      });

      it("claims execution exactly once, only when approved, and keeps the answer with outcome sent", async () => {
        const row = thread("ap3");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id));
        expect(await store.claimApprovalExecution(`${tag}-ap-1`, at(3))).toBe(false);
        expect(await store.claimApprovalExecution(`${tag}-ap-missing`, at(3))).toBe(false);
        await store.decideApproval(`${tag}-ap-1`, decision);
        const claims = await Promise.all(Array.from({ length: 20 }, () => store.claimApprovalExecution(`${tag}-ap-1`, at(3))));
        expect(claims.filter(Boolean)).toHaveLength(1);
        expect((await store.getApproval(`${tag}-ap-1`))!.outcome).toBeNull();
        await store.recordApprovalResult(`${tag}-ap-1`, { status: 201, headers: { "x-id": "7" }, body: { ok: true } });
        const stored = (await store.getApproval(`${tag}-ap-1`))!;
        expect(stored.internal.result).toEqual({ status: 201, headers: { "x-id": "7" }, body: { ok: true } });
        expect(stored.internal.executed_at).toBe(at(3));
        expect(stored.outcome).toBe("sent");
        expect(await store.claimApprovalExecution(`${tag}-ap-1`, at(4))).toBe(false);
      });

      it("lists pending approvals due at or before now, and deletes approvals with their thread", async () => {
        const row = thread("ap4");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id, { expires_at: at(5) }));
        await store.createApproval(approval("2", row.thread_id, { expires_at: at(50) }));
        await store.createApproval(approval("3", row.thread_id, { expires_at: at(10) }));
        await store.createApproval(approval("4", row.thread_id, { expires_at: at(4) }));
        await store.decideApproval(`${tag}-ap-4`, decided("rejected"));
        const due = ofTag(await store.dueApprovals(at(10))).map((a) => a.approval_id).sort();
        expect(due).toEqual([`${tag}-ap-1`, `${tag}-ap-3`]);
        expect(ofTag(await store.dueApprovals(at(4)))).toEqual([]);
        await store.deleteThread(row.thread_id);
        expect(await store.getApproval(`${tag}-ap-1`)).toBeNull();
        expect(ofTag(await store.dueApprovals(at(10)))).toEqual([]);
      });
    });

    describe("claimThread", () => {
      it("20 concurrent claims of one new thread: one creator, one lease holder, and every caller gets the stored row", async () => {
        const id = thread("claim").thread_id;
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.claimThread(thread("claim", { owner: `${tag}-owner-${i}` }), claim(`h${i}`))));
        expect(results.filter((r) => r.created)).toHaveLength(1);
        const holders = results.flatMap((r, i) => (r.lease ? [{ i, lease: r.lease }] : []));
        expect(holders).toHaveLength(1);
        expect(holders[0]!.lease).toMatchObject({ threadId: id, holder: `h${holders[0]!.i}` });
        expect(results.filter((r) => r.started)).toHaveLength(0);
        const stored = await store.getThread(id);
        expect(stored).not.toBeNull();
        expect(results.find((r) => r.created)!.row).toEqual(stored);
        for (const r of results) expect(r.row).toEqual(stored);
        expect(await lease.isHeld(id)).toBe(true);
        // The claim's lease is a lease like any other: renewed and released through the port.
        expect(await lease.renew(holders[0]!.lease, TTL)).toBe(true);
        await lease.release(holders[0]!.lease);
        expect(await lease.isHeld(id)).toBe(false);
      });

      it("takes the lease of a thread that exists whoever owns it, and none while another holder has it", async () => {
        const row = thread("old");
        await store.createThread(row);
        const first = await store.claimThread(thread("old", { owner: `${tag}-someone-else` }), claim("h1"));
        expect(first).toMatchObject({ created: false, row, started: false });
        expect(first.lease).toMatchObject({ threadId: row.thread_id, holder: "h1" });
        expect(await store.claimThread(row, claim("h2"))).toEqual({ created: false, row, lease: null, started: false });
        await lease.release(first.lease!);
        const next = await store.claimThread(row, claim("h3"));
        expect(next.lease).toMatchObject({ threadId: row.thread_id, holder: "h3" });
        expect(next.lease!.generation).toBeGreaterThan(first.lease!.generation);
      });

      it("with a start, on a thread it makes and leases: the run record and the first messages go in with it", async () => {
        const row = thread("start", { actor: "agent-7", created_at: at(1), updated_at: at(1) });
        const record = run("start", row.thread_id, { actor: "agent-7", metadata: { k: "v", n: 1 } });
        const user: Message = { id: mid(), role: "user", content: "hello 😀" };
        const claimed = await store.claimThread(row, claim("h"), { run: record, messages: [user] });
        expect(claimed).toMatchObject({ created: true, started: true, row });
        expect(claimed.lease).toMatchObject({ threadId: row.thread_id, holder: "h" });
        expect(await store.getThread(row.thread_id)).toEqual(row);
        expect(await store.getRun(record.run_id)).toEqual(record);
        expect(await store.listRuns(row.thread_id)).toEqual([record]);
        expect(await store.getMessages(row.thread_id)).toEqual([user]);
        expect(await lease.isHeld(row.thread_id)).toBe(true);
      });

      it("with a start writes no run and no message on a thread that existed, or whose lease another holder has", async () => {
        const existing = thread("existing");
        await store.createThread(existing);
        const again = await store.claimThread(existing, claim("h"), { run: run("old", existing.thread_id), messages: [{ id: mid(), role: "user", content: "x" }] });
        expect(again).toMatchObject({ created: false, started: false, row: existing });
        expect(again.lease).not.toBeNull(); // the lease is taken whoever owns the thread; the caller checks
        expect(await store.getRun(`${tag}-run-old`)).toBeNull();
        expect(await store.listRuns(existing.thread_id)).toEqual([]);
        expect(await store.getMessages(existing.thread_id)).toEqual([]);
        expect(await store.getThread(existing.thread_id)).toEqual(existing);

        // A thread id whose lease another holder has (a deleted thread's, say): busy, nothing written.
        const leased = thread("leased");
        expect(await lease.acquire(leased.thread_id, "other", TTL)).not.toBeNull();
        const busy = await store.claimThread(leased, claim("h"), { run: run("busy", leased.thread_id), messages: [{ id: mid(), role: "user", content: "x" }] });
        expect(busy).toEqual({ created: true, row: leased, lease: null, started: false });
        expect(await store.getRun(`${tag}-run-busy`)).toBeNull();
        expect(await store.getMessages(leased.thread_id)).toEqual([]);
      });

      it("with a start: 20 concurrent claims of one new thread write one run and one message, the creator's", async () => {
        const id = thread("start-race").thread_id;
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.claimThread(thread("start-race"), claim(`h${i}`), { run: run(`race-${i}`, id), messages: [{ id: `${tag}-m${i}`, role: "user", content: `${i}` }] }),
          ),
        );
        const winners = results.flatMap((r, i) => (r.started ? [i] : []));
        expect(winners).toHaveLength(1);
        const w = winners[0]!;
        expect(results[w]).toMatchObject({ created: true, lease: { holder: `h${w}` } });
        expect(results.filter((r) => r.lease !== null)).toHaveLength(1);
        expect(await store.listRuns(id)).toEqual([run(`race-${w}`, id)]);
        expect(await store.getMessages(id)).toEqual([{ id: `${tag}-m${w}`, role: "user", content: `${w}` }]);
      });
    });

    describe("finishRun", () => {
      const started = async (suffix: string) => {
        const row = thread(suffix, { created_at: at(1), updated_at: at(1) });
        const record = run(suffix, row.thread_id);
        const user: Message = { id: mid(), role: "user", content: "question" };
        const claimed = await store.claimThread(row, claim("h"), { run: record, messages: [user] });
        expect(claimed.started).toBe(true);
        return { row, record, user, handle: claimed.lease! };
      };

      it("writes the last messages, the run's end and releases the lease in one step", async () => {
        const { row, record, user, handle } = await started("fin");
        const answer: Message[] = [
          { id: mid(), role: "assistant", content: "", tool_calls: [{ id: "call_9", name: "calculator", args: { expression: "1+1" } }] },
          { id: mid(), role: "tool", content: "2", tool_call_id: "call_9", name: "calculator", is_error: false },
          { id: mid(), role: "assistant", content: "done" },
        ];
        await store.finishRun(record.run_id, end("ok", 5), { messages: answer, at: at(5) }, handle, lease);
        expect(await store.getMessages(row.thread_id)).toEqual([user, ...answer]);
        expect(await store.getRun(record.run_id)).toEqual({ ...record, ...end("ok", 5) });
        expect(await store.getThread(row.thread_id)).toEqual({ ...row, updated_at: at(5) });
        expect(await lease.isHeld(row.thread_id)).toBe(false);
        expect(await lease.acquire(row.thread_id, "next", TTL)).not.toBeNull();
      });

      it("throws lease_lost and writes nothing once the handle's lease was released", async () => {
        const { row, record, user, handle } = await started("released");
        await lease.release(handle);
        await expect(
          store.finishRun(record.run_id, end("error", 6, { error_type: "ModelError" }), { messages: [{ id: mid(), role: "assistant", content: "late" }], at: at(6) }, handle, lease),
        ).rejects.toMatchObject(leaseLost);
        expect(await store.getMessages(row.thread_id)).toEqual([user]);
        expect(await store.getRun(record.run_id)).toEqual(record);
        expect(await store.getThread(row.thread_id)).toEqual(row);
      });

      it("throws lease_lost and writes nothing when another holder has the thread now, and leaves that holder's lease", async () => {
        const { row, record, user, handle } = await started("moved");
        await lease.release(handle);
        const next = (await lease.acquire(row.thread_id, "next", TTL))!;
        const late = { messages: [{ id: mid(), role: "assistant" as const, content: "late" }], at: at(6) };
        await expect(store.finishRun(record.run_id, end("ok", 6), late, handle, lease)).rejects.toMatchObject(leaseLost);
        // A handle of a generation the lease never had is refused the same way.
        await expect(store.finishRun(record.run_id, end("ok", 6), late, { ...next, generation: next.generation + 100_000 }, lease)).rejects.toMatchObject(leaseLost);
        expect(await store.getMessages(row.thread_id)).toEqual([user]);
        expect(await store.getRun(record.run_id)).toEqual(record);
        expect(await store.getThread(row.thread_id)).toEqual(row);
        expect(await lease.isHeld(row.thread_id)).toBe(true);
        expect(await lease.renew(next, TTL)).toBe(true);
      });

      it("a second finish with the same handle is refused: the first one released the lease", async () => {
        const { row, record, user, handle } = await started("twice");
        const answer: Message = { id: mid(), role: "assistant", content: "done" };
        await store.finishRun(record.run_id, end("ok", 5), { messages: [answer], at: at(5) }, handle, lease);
        await expect(
          store.finishRun(record.run_id, end("error", 6), { messages: [{ id: mid(), role: "assistant", content: "again" }], at: at(6) }, handle, lease),
        ).rejects.toMatchObject(leaseLost);
        expect(await store.getMessages(row.thread_id)).toEqual([user, answer]);
        expect(await store.getRun(record.run_id)).toEqual({ ...record, ...end("ok", 5) });
        expect((await store.getThread(row.thread_id))!.updated_at).toBe(at(5));
      });
    });

    describe("threadBlockers", () => {
      it("finds nothing on a thread without approvals, or an unknown thread", async () => {
        const row = thread("quiet");
        await store.createThread(row);
        await store.createRun(run("quiet", row.thread_id, { status: "ok" }));
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [], due: null });
        expect(await store.threadBlockers(`${tag}-missing`)).toEqual({ pending: [], due: null });
      });

      it("lists the thread's pending approvals, newest first, and no decided ones or other threads'", async () => {
        const row = thread("tb");
        const other = thread("tb-other");
        await store.createThread(row);
        await store.createThread(other);
        const paused = run("p", row.thread_id, { status: "awaiting_approval" });
        await store.createRun(paused);
        const a1 = approval("1", row.thread_id, { run_id: paused.run_id, created_at: at(1) });
        const a2 = approval("2", row.thread_id, { run_id: paused.run_id, created_at: at(3) });
        const a3 = approval("3", row.thread_id, { run_id: paused.run_id, created_at: at(2) });
        const a4 = approval("4", row.thread_id, { run_id: paused.run_id, created_at: at(4) });
        for (const a of [a1, a2, a3, a4, approval("5", other.thread_id, { run_id: `${tag}-run-o` })]) await store.createApproval(a);
        await store.decideApproval(a4.approval_id, decision);
        const blockers = await store.threadBlockers(row.thread_id);
        expect(blockers.pending).toEqual([a2, a3, a1]);
        // the decided one makes its run due: each decision resumes the run
        expect(blockers.due).toEqual(paused);
      });

      it("names the paused run as soon as one of its approvals is decided, until it is resumed", async () => {
        const row = thread("due");
        await store.createThread(row);
        const paused = run("p", row.thread_id, { status: "awaiting_approval", metadata: { k: "v" }, usage: { input_tokens: 5, output_tokens: 6 } });
        await store.createRun(paused);
        await store.createRun(run("earlier", row.thread_id, { status: "ok", created_at: at(0) }));
        const a1 = approval("1", row.thread_id, { run_id: paused.run_id, created_at: at(1) });
        const a2 = approval("2", row.thread_id, { run_id: paused.run_id, created_at: at(2) });
        await store.createApproval(a1);
        await store.createApproval(a2);
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [a2, a1], due: null });

        const a1d = (await store.decideApproval(a1.approval_id, decision))!;
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [a2], due: paused });
        expect(a1d.status).toBe("approved");

        // The resumed run carried a1 out and waits on a2 now: a2 moves to it.
        expect(await store.markResumed(paused.run_id, `${tag}-run-next`)).toBe(true);
        const next = run("next", row.thread_id, { status: "awaiting_approval", created_at: at(5) });
        await store.createRun(next);
        await store.moveApproval(a2.approval_id, next.run_id);
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [{ ...a2, run_id: next.run_id }], due: null });

        await store.decideApproval(a2.approval_id, decided("expired"));
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [], due: next });
        expect(await store.markResumed(next.run_id, `${tag}-run-last`)).toBe(true);
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [], due: null });
      });

      it("names no run that is not paused, asked for nothing, or was resumed", async () => {
        const row = thread("notdue");
        await store.createThread(row);
        const runs = [
          run("none", row.thread_id, { status: "awaiting_approval" }), // asked for nothing
          run("ok", row.thread_id, { status: "ok" }),
          run("running", row.thread_id, { status: "running" }),
          run("resumed", row.thread_id, { status: "awaiting_approval", resumed_by: `${tag}-run-x` }),
        ];
        for (const r of runs) await store.createRun(r);
        for (const r of runs.slice(1)) {
          await store.createApproval(approval(r.run_id, row.thread_id, { run_id: r.run_id }));
          await store.decideApproval(`${tag}-ap-${r.run_id}`, decision);
        }
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [], due: null });
      });
    });

    describe("dueRuns", () => {
      /** A paused run on a thread of its own, whose approvals are made with the given statuses. */
      const pausedRun = async (suffix: string, created: number, statuses: readonly ("pending" | "approved" | "rejected" | "expired")[], fields: Partial<RunRecord> = {}) => {
        const row = thread(`dr-${suffix}`, { created_at: ancient(created), updated_at: ancient(created) });
        await store.createThread(row);
        const record = run(`dr-${suffix}`, row.thread_id, { status: "awaiting_approval", created_at: ancient(created), updated_at: ancient(created), ...fields });
        await store.createRun(record);
        for (const [i, status] of statuses.entries()) {
          const id = `${suffix}-${i}`;
          await store.createApproval(approval(id, row.thread_id, { run_id: record.run_id, created_at: ancient(created) }));
          if (status !== "pending") await store.decideApproval(`${tag}-ap-${id}`, decided(status));
        }
        return record;
      };

      it("lists paused runs with a decided approval that none resumed, oldest first, up to the limit", async () => {
        // Not due, and older than the due ones: listed first if they were wrongly taken.
        await pausedRun("pending", 0, ["pending", "pending"]);
        await pausedRun("asked-nothing", 0, []);
        await pausedRun("resumed", 0, ["approved"], { resumed_by: `${tag}-run-x` });
        await pausedRun("ok", 0, ["approved"], { status: "ok" });
        await pausedRun("running", 0, ["approved"], { status: "running" });
        await pausedRun("error", 0, ["rejected"], { status: "error" });
        const d1 = await pausedRun("d1", 30, ["approved", "pending"]);
        const d2 = await pausedRun("d2", 10, ["approved", "rejected", "expired"]);
        const d3 = await pausedRun("d3", 20, ["expired"]);

        expect(await store.dueRuns(2)).toEqual([d2, d3]);
        expect(await store.dueRuns(1)).toEqual([d2]);
        expect(await store.dueRuns(0)).toEqual([]);
        expect(ofTag(await store.dueRuns(1_000))).toEqual([d2, d3, d1]);

        expect(await store.markResumed(d2.run_id, `${tag}-run-next`)).toBe(true);
        expect(await store.dueRuns(2)).toEqual([d3, d1]);
      });

      it("takes a run once any of its approvals is decided", async () => {
        const record = await pausedRun("late", 5, ["pending", "pending"]);
        expect(ids(ofTag(await store.dueRuns(1_000)))).toEqual([]);
        await store.decideApproval(`${tag}-ap-late-1`, decided("rejected"));
        expect(ofTag(await store.dueRuns(1_000))).toEqual([record]);
      });
      it("follows a run through every write of it and of its approvals, and forgets a deleted thread's", async () => {
        const row = thread("dr-life", { created_at: ancient(40), updated_at: ancient(40) });
        await store.createThread(row);
        const record = run("dr-life", row.thread_id, { status: "running", created_at: ancient(40), updated_at: ancient(40) });
        await store.createRun(record);
        await store.createApproval(approval("life-0", row.thread_id, { run_id: record.run_id, created_at: ancient(40), expires_at: ancient(41) }, "call_life"));
        const due = async () => ids(ofTag(await store.dueRuns(1_000)));
        expect(ofTag(await store.dueApprovals(ancient(50))).map((a) => a.approval_id)).toEqual([`${tag}-ap-life-0`]);
        await store.decideApproval(`${tag}-ap-life-0`, decision);
        expect(ofTag(await store.dueApprovals(ancient(50)))).toEqual([]);
        expect(await due()).toEqual([]); // still running
        await store.updateRun(record.run_id, { status: "awaiting_approval" });
        expect(await due()).toEqual([record.run_id]);
        await store.updateRun(record.run_id, { status: "ok" });
        expect(await due()).toEqual([]);
        await store.updateRun(record.run_id, { status: "awaiting_approval" });
        expect(await due()).toEqual([record.run_id]);
        // A pending approval moved to another paused run makes that one due once decided, and only it.
        const next = run("dr-life-next", row.thread_id, { status: "awaiting_approval", created_at: ancient(41), updated_at: ancient(41) });
        await store.createRun(next);
        await store.createApproval(approval("life-1", row.thread_id, { run_id: record.run_id, created_at: ancient(41) }, "call_life_1"));
        expect(await store.markResumed(record.run_id, next.run_id)).toBe(true);
        await store.moveApproval(`${tag}-ap-life-1`, next.run_id);
        expect(await due()).toEqual([]);
        await store.decideApproval(`${tag}-ap-life-1`, decided("rejected"));
        expect(await due()).toEqual([next.run_id]);
        expect((await store.findApproval(row.thread_id, "call_life", "sha256:00"))?.approval_id).toBe(`${tag}-ap-life-0`);

        expect(await store.deleteThread(row.thread_id)).toBe(true);
        expect(await due()).toEqual([]);
        expect(await store.threadBlockers(row.thread_id)).toEqual({ pending: [], due: null });
        expect(await store.listApprovals({ thread_id: row.thread_id, limit: 10, offset: 0 })).toEqual([]);
        expect(await store.findApproval(row.thread_id, "call_life", "sha256:00")).toBeNull();
      });
    });

    describe("markResumed", () => {
      it("exactly one of 10 concurrent callers marks a paused run resumed, and only once", async () => {
        const row = thread("mr");
        await store.createThread(row);
        const paused = run("p", row.thread_id, { status: "awaiting_approval" });
        await store.createRun(paused);
        await store.createApproval(approval("1", row.thread_id, { run_id: paused.run_id }));
        await store.decideApproval(`${tag}-ap-1`, decision);
        const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.markResumed(paused.run_id, `${tag}-run-by-${i}`)));
        const winners = results.flatMap((ok, i) => (ok ? [i] : []));
        expect(winners).toHaveLength(1);
        expect(await store.getRun(paused.run_id)).toEqual({ ...paused, resumed_by: `${tag}-run-by-${winners[0]}` });
        expect(await store.markResumed(paused.run_id, `${tag}-run-late`)).toBe(false);
        expect((await store.getRun(paused.run_id))!.resumed_by).toBe(`${tag}-run-by-${winners[0]}`);
      });

      it("answers false for an unknown run", async () => {
        expect(await store.markResumed(`${tag}-run-missing`, `${tag}-run-by`)).toBe(false);
        expect(await store.getRun(`${tag}-run-missing`)).toBeNull();
      });
    });

    describe("findApproval", () => {
      it("finds the approval of the thread, tool call and digest, and nothing when any of them differs", async () => {
        const row = thread("fa");
        const other = thread("fa-other");
        await store.createThread(row);
        await store.createThread(other);
        const a1 = approval("1", row.thread_id, { digest: "sha256:aa" }, "call_1");
        const a2 = approval("2", row.thread_id, { digest: "sha256:bb" }, "call_2");
        const a3 = approval("3", other.thread_id, { digest: "sha256:aa" }, "call_1");
        for (const a of [a1, a2, a3]) await store.createApproval(a);

        expect(await store.findApproval(row.thread_id, "call_1", "sha256:aa")).toEqual(a1);
        expect(await store.findApproval(row.thread_id, "call_2", "sha256:bb")).toEqual(a2);
        expect(await store.findApproval(other.thread_id, "call_1", "sha256:aa")).toEqual(a3);

        expect(await store.findApproval(row.thread_id, "call_1", "sha256:bb")).toBeNull(); // another digest
        expect(await store.findApproval(row.thread_id, "call_3", "sha256:aa")).toBeNull(); // another call
        expect(await store.findApproval(other.thread_id, "call_2", "sha256:bb")).toBeNull(); // another thread
        expect(await store.findApproval(`${tag}-missing`, "call_1", "sha256:aa")).toBeNull();
      });

      it("finds the approval as it stands once decided", async () => {
        const row = thread("fa2");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id, { digest: "sha256:cc" }, "call_7"));
        const got = await store.decideApproval(`${tag}-ap-1`, decided("rejected"));
        expect(await store.findApproval(row.thread_id, "call_7", "sha256:cc")).toEqual(got);
      });
    });

    describe("markOutcomeUnknown", () => {
      const sending = async (suffix: string) => {
        const row = thread(suffix);
        await store.createThread(row);
        const asked = approval("1", row.thread_id);
        await store.createApproval(asked);
        expect((await store.getApproval(asked.approval_id))!.outcome).toBeNull();
        await store.decideApproval(asked.approval_id, decision);
        expect(await store.claimApprovalExecution(asked.approval_id, at(3))).toBe(true);
        return (await store.getApproval(asked.approval_id))!;
      };

      it("marks a call cut off before its answer: outcome unknown, nothing else changed", async () => {
        const before = await sending("ou");
        expect(before.outcome).toBeNull();
        await store.markOutcomeUnknown(before.approval_id);
        expect(await store.getApproval(before.approval_id)).toEqual({ ...before, outcome: "unknown" });
        await expect(store.markOutcomeUnknown(`${tag}-ap-missing`)).resolves.toBeUndefined();
      });

      it("changes nothing once the answer was recorded: the outcome stays sent", async () => {
        const before = await sending("ou2");
        const result = { status: 200, headers: {}, body: "plain text" };
        await store.recordApprovalResult(before.approval_id, result);
        const sent = (await store.getApproval(before.approval_id))!;
        expect(sent.outcome).toBe("sent");
        expect(sent.internal.result).toEqual(result);
        await store.markOutcomeUnknown(before.approval_id);
        expect(await store.getApproval(before.approval_id)).toEqual(sent);
      });
    });

    describe("markLostRuns", () => {
      it("leaves a running run alone while its thread's lease holds", async () => {
        const row = thread("alive", { created_at: at(1), updated_at: at(1) });
        const record = run("alive", row.thread_id);
        expect((await store.claimThread(row, claim("h"), { run: record, messages: [] })).started).toBe(true);
        expect(await store.markLostRuns(0)).toBeGreaterThanOrEqual(0);
        expect(await store.getRun(record.run_id)).toEqual(record);
      });

      it.runIf(!traits.sharedByProcesses)("in process: always 0, running records stay as they are", async () => {
        const row = thread("nolease");
        await store.createThread(row);
        const record = run("nolease", row.thread_id, { created_at: ancient(0) });
        await store.createRun(record);
        expect(await store.markLostRuns(0)).toBe(0);
        expect(await store.markLostRuns(60_000)).toBe(0);
        expect(await store.getRun(record.run_id)).toEqual(record);
      });
    });

    describe("tasks", () => {
      it("stores U+0000 in task text as U+FFFD, on create and on update (spec 2.5)", async () => {
        const row = thread("t-nul");
        await store.createThread(row);
        const created = task("nul", row.thread_id, { status_parts: [{ kind: "text", text: "a\u0000b" }], artifacts: [{ artifactId: "x", name: "response", parts: [{ kind: "text", text: "\u0000" }] }] });
        await store.createTask(created);
        const read = (await store.getTask(created.task_id))!;
        expect(read.status_parts).toEqual([{ kind: "text", text: "a\ufffdb" }]);
        expect(read.artifacts[0]!.parts).toEqual([{ kind: "text", text: "\ufffd" }]);
        await store.updateTask(created.task_id, { status_parts: [{ kind: "data", data: { note: "x\u0000" } }], updated_at: at(3) });
        expect((await store.getTask(created.task_id))!.status_parts).toEqual([{ kind: "data", data: { note: "x\ufffd" } }]);
      });

      it("creates, reads and patches a task", async () => {
        const row = thread("t");
        await store.createThread(row);
        const created = task("1", row.thread_id, {
          actor: "agent-x",
          status_parts: [{ kind: "text", text: "working on it" }, { kind: "data", data: { step: [1, null, "x"] }, mediaType: "application/json" }],
          artifacts: [{ artifactId: "a1", name: "answer", parts: [{ kind: "text", text: "partial 😀" }] }],
          run_id: `${tag}-run-1`,
          instance_id: "instance-a",
        });
        await store.createTask(created);
        expect(await store.getTask(created.task_id)).toEqual(created);
        expect(await store.getTask(`${tag}-task-missing`)).toBeNull();

        const patch = {
          state: "input-required" as const,
          status_parts: [{ kind: "data" as const, data: { type: "approval_required" } }],
          approval_ids: [`${tag}-ap-1`, `${tag}-ap-2`],
          instance_id: null,
          updated_at: at(5),
        };
        expect(await store.updateTask(created.task_id, patch)).toBe(true);
        expect(await store.getTask(created.task_id)).toEqual({ ...created, ...patch });

        expect(await store.updateTask(created.task_id, { state: "completed", artifacts: [], approval_ids: [], run_id: null, updated_at: at(6) })).toBe(true);
        expect(await store.getTask(created.task_id)).toEqual({ ...created, ...patch, state: "completed", artifacts: [], approval_ids: [], run_id: null, updated_at: at(6) });
        expect(await store.updateTask(`${tag}-task-missing`, { updated_at: at(7) })).toBe(false);
      });

      it("a finished task (completed, failed, canceled) is never changed again, nor one updated since the instant given: updateTask answers false and writes nothing", async () => {
        const row = thread("tf");
        await store.createThread(row);
        for (const [i, state] of (["completed", "failed", "canceled"] as const).entries()) {
          const finished = task(`f${i}`, row.thread_id, { state, status_parts: [{ kind: "text", text: state }], run_id: `${tag}-run-f${i}` });
          await store.createTask(finished);
          expect(await store.updateTask(finished.task_id, { state: "working", status_parts: [], run_id: null, updated_at: at(9) })).toBe(false);
          expect(await store.updateTask(finished.task_id, { state: "canceled", updated_at: at(9) })).toBe(false);
          expect(await store.updateTask(finished.task_id, {})).toBe(false);
          expect(await store.getTask(finished.task_id)).toEqual(finished);
        }
        const open = task("f3", row.thread_id, { state: "input-required", updated_at: at(4) });
        await store.createTask(open);
        expect(await store.updateTask(open.task_id, {})).toBe(true);
        // Given the instant it was read at: refused once it was updated since.
        expect(await store.updateTask(open.task_id, { status_parts: [{ kind: "text", text: "late" }], updated_at: at(9) }, at(3))).toBe(false);
        expect((await store.getTask(open.task_id))!.status_parts).toEqual(open.status_parts);
        expect(await store.updateTask(open.task_id, { status_parts: [{ kind: "text", text: "read at 4" }], updated_at: at(5) }, at(4))).toBe(true);
        expect(await store.updateTask(open.task_id, { updated_at: at(9) }, at(4))).toBe(false);
        expect(await store.updateTask(open.task_id, { state: "canceled", updated_at: at(9) })).toBe(true);
        expect((await store.getTask(open.task_id))!.state).toBe("canceled");
      });

      it("lists an owner's tasks, most recently updated first, by actor and by thread, in pages", async () => {
        const a = thread("ta");
        const b = thread("tb");
        await store.createThread(a);
        await store.createThread(b);
        const owner = `${tag}-owner`;
        const tasks = [
          task("1", a.thread_id, { updated_at: at(3) }),
          task("2", a.thread_id, { actor: "agent-x", updated_at: at(5) }),
          task("3", b.thread_id, { actor: "agent-x", updated_at: at(4) }),
          task("4", b.thread_id, { updated_at: at(1) }),
          task("5", a.thread_id, { owner: `${tag}-other`, updated_at: at(9) }),
        ];
        for (const t of tasks) await store.createTask(t);
        const listed = (q: Partial<Parameters<Store["listTasks"]>[0]>) =>
          store.listTasks({ owner, limit: 10, offset: 0, ...q }).then((rows) => rows.map((t) => t.task_id.slice(tag.length + 6)));
        expect(await listed({})).toEqual(["2", "3", "1", "4"]);
        expect(await store.listTasks({ owner, limit: 10, offset: 0 })).toContainEqual(tasks[2]);
        expect(await listed({ actor: "agent-x" })).toEqual(["2", "3"]);
        expect(await listed({ context_id: a.thread_id })).toEqual(["2", "1"]);
        expect(await listed({ actor: "agent-x", context_id: b.thread_id })).toEqual(["3"]);
        expect(await listed({ actor: "agent-y" })).toEqual([]);
        expect(await listed({ owner: `${tag}-other` })).toEqual(["5"]);
        expect(await listed({ owner: `${tag}-nobody` })).toEqual([]);
        expect(await listed({ limit: 2, offset: 1 })).toEqual(["3", "1"]);
        expect(await listed({ limit: 2, offset: 4 })).toEqual([]);
        // An update moves a task up the list.
        await store.updateTask(`${tag}-task-4`, { updated_at: at(8) });
        expect(await listed({})).toEqual(["4", "2", "3", "1"]);
      });

      it("tasksWaitingOn: the thread's tasks that list the approval and ask for a decision or are queued on one (working, no run)", async () => {
        const a = thread("twa");
        const b = thread("twb");
        await store.createThread(a);
        await store.createThread(b);
        const ap = (n: number) => `${tag}-ap-${n}`;
        const t1 = task("1", a.thread_id, { state: "input-required", approval_ids: [ap(1), ap(2)] });
        const t2 = task("2", a.thread_id, { state: "input-required", approval_ids: [ap(2)] });
        // Working on a run of its own: its run, not the decision's, answers it.
        const t3 = task("3", a.thread_id, { state: "working", approval_ids: [ap(1)], run_id: `${tag}-run-3` });
        const t4 = task("4", b.thread_id, { state: "input-required", approval_ids: [ap(1)] });
        // Queued on a decision whose run has not started: it takes that run's outcome.
        const t5 = task("5", b.thread_id, { state: "working", approval_ids: [ap(3)] });
        const t6 = task("6", b.thread_id, { state: "completed", approval_ids: [ap(3)] });
        for (const t of [t1, t2, t3, t4, t5, t6]) await store.createTask(t);
        const byId = (rows: TaskRecord[]) => [...rows].sort((x, y) => (x.task_id < y.task_id ? -1 : 1));
        expect(await store.tasksWaitingOn(a.thread_id, ap(1))).toEqual([t1]);
        expect(byId(await store.tasksWaitingOn(a.thread_id, ap(2)))).toEqual([t1, t2]);
        expect(await store.tasksWaitingOn(a.thread_id, ap(3))).toEqual([]);
        expect(await store.tasksWaitingOn(b.thread_id, ap(1))).toEqual([t4]);
        expect(await store.tasksWaitingOn(b.thread_id, ap(3))).toEqual([t5]);
        expect(await store.tasksWaitingOn(`${tag}-missing`, ap(1))).toEqual([]);
        await store.updateTask(t1.task_id, { state: "working", approval_ids: [] });
        expect(await store.tasksWaitingOn(a.thread_id, ap(1))).toEqual([]);
      });

      it("strandedTasks: tasks that wait on approvals none of which is pending, or work on a run that ended, not updated since then, oldest first", async () => {
        const row = thread("st");
        await store.createThread(row);
        const [p, d, r] = [approval("st-p", row.thread_id), approval("st-d", row.thread_id), approval("st-r", row.thread_id)];
        for (const x of [p, d, r]) await store.createApproval(x);
        await store.decideApproval(d.approval_id, decided("approved"));
        await store.decideApproval(r.approval_id, decided("rejected"));
        // Later than every other case's tasks, which may also wait; none of them is on this thread.
        const old = (s: number) => ({ created_at: at(1_000 + s), updated_at: at(1_000 + s) });
        const s1 = task("st1", row.thread_id, { state: "input-required", approval_ids: [d.approval_id], ...old(3) });
        const s2 = task("st2", row.thread_id, { state: "input-required", approval_ids: [d.approval_id, p.approval_id], ...old(1) });
        const s3 = task("st3", row.thread_id, { state: "working", approval_ids: [r.approval_id], ...old(2) });
        const s4 = task("st4", row.thread_id, { state: "working", approval_ids: [d.approval_id], run_id: `${tag}-run-st4`, ...old(1) });
        const s5 = task("st5", row.thread_id, { state: "completed", approval_ids: [d.approval_id], ...old(1) });
        const s6 = task("st6", row.thread_id, { state: "input-required", approval_ids: [d.approval_id], ...old(60) });
        const s7 = task("st7", row.thread_id, { state: "input-required", approval_ids: [], ...old(1) });
        // Working on a run of its own: stranded once that run has ended (its task's write was lost).
        const [going, ended] = [run("st-going", row.thread_id), run("st-ended", row.thread_id)];
        for (const r of [going, ended]) await store.createRun(r);
        await store.updateRun(ended.run_id, { status: "ok" });
        const s8 = task("st8", row.thread_id, { state: "working", run_id: going.run_id, ...old(5) });
        const s9 = task("st9", row.thread_id, { state: "working", run_id: ended.run_id, ...old(6) });
        for (const t of [s1, s2, s3, s4, s5, s6, s7, s8, s9]) await store.createTask(t);
        const ours = (rows: TaskRecord[]) => rows.filter((t) => t.context_id === row.thread_id).map((t) => t.task_id);
        // s2 waits on a pending approval, s4 and s8 on runs that go on, s5 is done, s6 too recent, s7 lists nothing.
        expect(ours(await store.strandedTasks(at(1_050), 100))).toEqual([s3.task_id, s1.task_id, s9.task_id]);
        expect((await store.strandedTasks(at(1_050), 1)).length).toBe(1);
        // In pages, each after the last task of the one before (from this case's first instant).
        const pages: string[][] = [];
        let after: TaskCursor = { updated_at: at(1_000), task_id: "" };
        for (;;) {
          const page = await store.strandedTasks(at(1_050), 1, after);
          if (page.length === 0) break;
          pages.push(ours(page));
          after = page[0]!;
        }
        expect(pages).toEqual([[s3.task_id], [s1.task_id], [s9.task_id]]);
        await store.decideApproval(p.approval_id, decided("approved"));
        expect(ours(await store.strandedTasks(at(1_050), 100))).toEqual([s2.task_id, s3.task_id, s1.task_id, s9.task_id]);
        await store.updateTask(s1.task_id, { state: "completed", updated_at: at(1_004) });
        expect(ours(await store.strandedTasks(at(1_050), 100))).toEqual([s2.task_id, s3.task_id, s9.task_id]);
        // Ended, so that no later case (markLostRuns) finds a running run without a lease here.
        await store.updateRun(going.run_id, { status: "ok" });
      });

      it("dropTasksBefore drops the tasks not updated since then, and counts them", async () => {
        const row = thread("td");
        await store.createThread(row);
        for (const [n, s] of [[1, 1], [2, 5], [3, 10]] as const) await store.createTask(task(`${n}`, row.thread_id, { created_at: ancient(0), updated_at: ancient(s) }));
        expect(await store.dropTasksBefore(ancient(5))).toBe(1); // strictly before: the task updated at that instant stays
        expect(await store.getTask(`${tag}-task-1`)).toBeNull();
        expect(await store.getTask(`${tag}-task-2`)).not.toBeNull();
        expect(await store.dropTasksBefore(ancient(5))).toBe(0);
        expect(await store.dropTasksBefore(ancient(11))).toBe(2);
        expect(await store.listTasks({ owner: `${tag}-owner`, limit: 10, offset: 0 })).toEqual([]);
        expect(await store.getThread(row.thread_id)).toEqual(row);
      });

      it("go with their thread", async () => {
        const doomed = thread("tdel");
        const kept = thread("tkeep");
        await store.createThread(doomed);
        await store.createThread(kept);
        const waiting = task("1", doomed.thread_id, { state: "input-required", approval_ids: [`${tag}-ap-del`] });
        await store.createTask(waiting);
        const stays = task("2", kept.thread_id);
        await store.createTask(stays);
        const ofThread = (threadId: string) => store.listTasks({ owner: `${tag}-owner`, context_id: threadId, limit: 10, offset: 0 });
        expect(await store.tasksWaitingOn(doomed.thread_id, `${tag}-ap-del`)).toEqual([waiting]);
        expect(await store.deleteThread(doomed.thread_id)).toBe(true);
        expect(await store.getTask(`${tag}-task-1`)).toBeNull();
        expect(await store.listTasks({ owner: `${tag}-owner`, limit: 10, offset: 0 })).toEqual([stays]);
        // Found by no read that goes by thread or by what waits, and a thread made again under the id starts with none.
        expect(await ofThread(doomed.thread_id)).toEqual([]);
        expect(await store.tasksWaitingOn(doomed.thread_id, `${tag}-ap-del`)).toEqual([]);
        expect((await store.strandedTasks(at(1_000_000), 1_000)).filter((t) => t.context_id === doomed.thread_id)).toEqual([]);
        await store.createThread(doomed);
        const anew = task("3", doomed.thread_id);
        await store.createTask(anew);
        expect(await ofThread(doomed.thread_id)).toEqual([anew]);
        expect(await ofThread(kept.thread_id)).toEqual([stays]);
      });
    });

    describe("health", () => {
      it("answers ping", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it("closes a store of its own, leaving the others open", async () => {
        const spare = await fixture.spare();
        await expect(spare.ping()).resolves.toBeUndefined();
        await expect(spare.close()).resolves.toBeUndefined();
        await expect(store.ping()).resolves.toBeUndefined();
      });
    });
  });
}
