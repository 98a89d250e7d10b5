/**
 * The Store contract (src/store/ports.ts), as a suite every adapter runs. Each test uses ids of
 * its own (a random tag), so an adapter backed by a shared database can run it without
 * truncating between tests.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isoTime } from "../../src/clock.js";
import type { ApprovalRecord } from "../../src/approvals/types.js";
import type { Message, RunRecord, Store, ThreadRow } from "../../src/store/ports.js";

export interface StoreFixture {
  store: Store;
  cleanup?: () => Promise<void>;
}

const BASE = Date.UTC(2024, 0, 1, 12, 0, 0);
const at = (seconds: number) => isoTime(BASE + seconds * 1000);

export function describeStoreContract(name: string, make: () => Promise<StoreFixture>): void {
  describe(`${name}: Store contract`, () => {
    let fixture: StoreFixture;
    let store: Store;
    let tag: string;

    beforeEach(async () => {
      fixture = await make();
      store = fixture.store;
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

    const run = (runSuffix: string, threadId: string, fields: Partial<RunRecord> = {}): RunRecord => ({
      run_id: `${tag}-run-${runSuffix}`,
      thread_id: threadId,
      status: "running",
      error_type: null,
      error_id: null,
      principal_hash: "0123456789abcdef0123456789abcdef",
      actor: null,
      metadata: {},
      usage: { input_tokens: 0, output_tokens: 0 },
      created_at: at(1),
      updated_at: at(1),
      ended_at: null,
      latency_ms: null,
      resumed_from: null,
      resumed_by: null,
      ...fields,
    });

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
      const approval = (suffix: string, threadId: string, fields: Partial<ApprovalRecord> = {}): ApprovalRecord => ({
        approval_id: `${tag}-ap-${suffix}`,
        thread_id: threadId,
        run_id: `${tag}-run-1`,
        status: "pending",
        api: "orders",
        method: "POST",
        path: "/orders",
        operation_id: null,
        rpc_method: null,
        a2a_operation: null,
        query: { a: "1" },
        body: { item: "x" },
        tool: "t",
        reason: "t: because",
        approvers: ["requester", "role:admin"],
        requester: `${tag}-owner`,
        requester_actor: null,
        decide_with: "direct",
        relayers: [],
        decided_by: null,
        decided_via: null,
        digest: "sha256:00",
        nested: null,
        effect: null,
        created_at: at(1),
        expires_at: at(100),
        decided_at: null,
        comment: null,
        internal: {
          tool_call_id: "call_1",
          gate_key: "k",
          call: { query: [["a", "1"]], body: { item: "x", card: "secret" } },
          requester_principal: { id: "alice", roles: [], attributes: {}, actor: null },
          executed_at: null,
          result: null,
        },
        ...fields,
      });
      const decision = { status: "approved" as const, decided_by: "d", decided_via: null, decided_at: at(2), comment: "ok", dropCall: true };

      it("creates, reads, lists newest first with filters and visibility", async () => {
        const row = thread("ap");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id, { created_at: at(1) }));
        await store.createApproval(approval("2", row.thread_id, { created_at: at(2), approvers: ["role:ops"], requester: "other" }));
        expect((await store.getApproval(`${tag}-ap-1`))!.internal.call.body).toEqual({ item: "x", card: "secret" });
        const all = await store.listApprovals({ thread_id: row.thread_id, limit: 10, offset: 0 });
        expect(all.map((a) => a.approval_id)).toEqual([`${tag}-ap-2`, `${tag}-ap-1`]);
        const mine = await store.listApprovals({ thread_id: row.thread_id, limit: 10, offset: 0, visibleTo: { requester: `${tag}-owner`, roles: [] } });
        expect(mine.map((a) => a.approval_id)).toEqual([`${tag}-ap-1`]);
        const ops = await store.listApprovals({ thread_id: row.thread_id, limit: 10, offset: 0, visibleTo: { requester: "nobody", roles: ["ops"] } });
        expect(ops.map((a) => a.approval_id)).toEqual([`${tag}-ap-2`]);
        expect(await store.listApprovals({ thread_id: row.thread_id, status: "approved", limit: 10, offset: 0 })).toEqual([]);
        expect((await store.listApprovals({ thread_id: row.thread_id, limit: 1, offset: 1 })).map((a) => a.approval_id)).toEqual([`${tag}-ap-1`]);
      });

      it("records a decision once under 20 concurrent deciders, dropping the shown call when asked", async () => {
        const row = thread("ap2");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id));
        const results = await Promise.all(Array.from({ length: 20 }, () => store.decideApproval(`${tag}-ap-1`, decision)));
        expect(results.filter((r) => r !== null)).toHaveLength(1);
        const stored = (await store.getApproval(`${tag}-ap-1`))!;
        expect(stored).toMatchObject({ status: "approved", decided_by: "d", comment: "ok", query: null, body: null });
        expect(await store.decideApproval(`${tag}-ap-1`, { ...decision, status: "rejected" })).toBeNull();
      });

      it("claims execution exactly once, only when approved, and keeps the answer", async () => {
        const row = thread("ap3");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id));
        expect(await store.claimApprovalExecution(`${tag}-ap-1`, at(3))).toBe(false);
        await store.decideApproval(`${tag}-ap-1`, decision);
        const claims = await Promise.all(Array.from({ length: 20 }, () => store.claimApprovalExecution(`${tag}-ap-1`, at(3))));
        expect(claims.filter(Boolean)).toHaveLength(1);
        await store.recordApprovalResult(`${tag}-ap-1`, { status: 201, headers: {}, body: { ok: true } });
        const stored = (await store.getApproval(`${tag}-ap-1`))!;
        expect(stored.internal.result).toEqual({ status: 201, headers: {}, body: { ok: true } });
        expect(stored.internal.executed_at).toBe(at(3));
      });

      it("lists due pending approvals and deletes approvals with their thread", async () => {
        const row = thread("ap4");
        await store.createThread(row);
        await store.createApproval(approval("1", row.thread_id, { expires_at: at(5) }));
        await store.createApproval(approval("2", row.thread_id, { expires_at: at(50) }));
        const due = (await store.dueApprovals(at(10))).filter((a) => a.thread_id === row.thread_id);
        expect(due.map((a) => a.approval_id)).toEqual([`${tag}-ap-1`]);
        await store.deleteThread(row.thread_id);
        expect(await store.getApproval(`${tag}-ap-1`)).toBeNull();
      });
    });

    describe("health", () => {
      it("answers ping", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });
    });
  });
}
