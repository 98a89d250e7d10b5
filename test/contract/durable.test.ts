/**
 * The lease and store contracts against the Durable Object adapters in workerd (Miniflare): the
 * lease objects (one per thread) and the store object on SQLite, through the adapters the worker
 * uses, built into a test worker (test/support/durable-harness.ts). The objects time leases by
 * workerd's clock, so the lease suite runs on real time, at half its scale: a call from the test
 * through Miniflare to an object takes tens of milliseconds, up to a few hundred while other
 * suites run, and the suite checks expiry 1 s (scaled) either side of the ttl.
 */
import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEEP_MS } from "../../src/store/durable/lease-state.js";
import { approvalListQuery } from "../../src/store/durable/approvals.js";
import { STRANDED_WHERE } from "../../src/store/durable/tasks.js";
import { threadListQuery } from "../../src/store/durable/threads.js";
import type { Store, ThreadLease } from "../../src/store/ports.js";
import type { LeaseStorage } from "../support/durable-harness.js";
import { remote, startHarness } from "../support/workerd.js";
import { describeLeaseContract } from "./lease.js";
import { describeStoreContract } from "./store.js";

let mf: Miniflare;
let lease: ThreadLease;
let store: Store;

beforeAll(async () => {
  mf = await startHarness();
  lease = remote<ThreadLease>(mf, "lease");
  store = remote<Store>(mf, "store");
});
afterAll(async () => {
  await mf?.dispose();
});

it("answers ping", async () => {
  await expect(store.ping()).resolves.toBeUndefined();
});

describeLeaseContract("durable object", async () => ({
  lease,
  scale: 0.5,
  clock: { advance: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) },
}));

// claimThread and finishRun are given the lease port, which they ignore: the thread's lease
// object takes the lease and makes the write in one step.
describeStoreContract("durable object", async () => ({ store, lease, spare: async () => remote<Store>(mf, "store") }), { sharedByProcesses: true });

describe("durable object: the lease object's alarm", () => {
  const inspect = (threadId: string) => remote<{ inspect(threadId: string): Promise<LeaseStorage> }>(mf, "leaseObject").inspect(threadId);

  it("is set at the expiry; when it fires it clears a holder that never came back and is set again for the deletion KEEP_MS later", async () => {
    const threadId = `alarm-${crypto.randomUUID()}`;
    const handle = (await lease.acquire(threadId, "gone", 1_000))!;
    const held = await inspect(threadId);
    expect(held.state).toMatchObject({ holder: "gone", generation: handle.generation });
    expect(held.alarm).toBe(held.state!.expiresAt);
    // Renewed: the alarm moves with the expiry.
    expect(await lease.renew(handle, 1_500)).toBe(true);
    const renewed = await inspect(threadId);
    expect(renewed.state!.expiresAt).toBeGreaterThan(held.state!.expiresAt);
    expect(renewed.alarm).toBe(renewed.state!.expiresAt);

    // No renewal: the alarm fires at the expiry (workerd's clock) and clears the holder in storage.
    let after = renewed;
    for (const until = Date.now() + 10_000; after.state?.holder !== null && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 100));
      after = await inspect(threadId);
    }
    expect(after.state).toEqual({ ...renewed.state, holder: null });
    expect(after.alarm).toBe(renewed.state!.expiresAt + KEEP_MS);
    expect(await lease.isHeld(threadId)).toBe(false);
  });

  it("after a release is set for the deletion KEEP_MS after the lease ended", async () => {
    const threadId = `alarm-${crypto.randomUUID()}`;
    const handle = (await lease.acquire(threadId, "a", 60_000))!;
    await lease.release(handle);
    const released = await inspect(threadId);
    expect(released.state).toMatchObject({ holder: null, generation: handle.generation });
    expect(released.state!.expiresAt).toBeLessThan(Date.now() + 60_000 - 1_000);
    expect(released.alarm).toBe(released.state!.expiresAt + KEEP_MS);
  });
});

describe("durable object: runs of isolates that died", () => {
  const at = (s: number) => new Date(Date.UTC(2001, 0, 1) + s * 1000).toISOString().replace("Z", "+00:00");
  const run = (runId: string, threadId: string) => ({
    run_id: runId, thread_id: threadId, status: "running" as const, error_type: null, error_id: null, principal_hash: "o", actor: null,
    metadata: {}, usage: { input_tokens: 0, output_tokens: 0 }, created_at: at(1), updated_at: at(1), ended_at: null, latency_ms: null,
    resumed_from: null, resumed_by: null,
  });
  const task = (taskId: string, threadId: string, runId: string) => ({
    task_id: taskId, context_id: threadId, owner: "o", actor: null, state: "working" as const, status_parts: [], artifacts: [], approval_ids: [],
    run_id: runId, instance_id: "gone", created_at: at(1), updated_at: at(1),
  });

  it("marks a running run interrupted (ProcessLost) once its thread has had no lease for the grace, failing its working task; a held thread's run stays", async () => {
    const tag = crypto.randomUUID();
    const [dead, alive] = [`dead-${tag}`, `alive-${tag}`];
    for (const id of [dead, alive]) {
      await store.createThread({ thread_id: id, owner: "o", actor: null, created_at: at(0), updated_at: at(0) });
      await store.createRun(run(`r-${id}`, id));
      await store.createTask(task(`t-${id}`, id, `r-${id}`));
    }
    const held = (await lease.acquire(alive, "alive", 10_000))!;
    // A lease that ended a moment ago has not lapsed for a minute yet.
    const brief = (await lease.acquire(dead, "brief", 10_000))!;
    await lease.release(brief);
    expect(await store.markLostRuns(60_000)).toBe(0);
    expect((await store.getRun(`r-${dead}`))!.status).toBe("running");

    expect(await store.markLostRuns(0)).toBeGreaterThanOrEqual(1);
    expect(await store.getRun(`r-${dead}`)).toMatchObject({ status: "interrupted", error_type: "ProcessLost" });
    expect((await store.getRun(`r-${dead}`))!.ended_at).not.toBeNull();
    expect(await store.getTask(`t-${dead}`)).toMatchObject({ state: "failed", status_parts: [{ kind: "text" }, { kind: "data", data: { code: "run_failed" } }] });
    expect(await store.getRun(`r-${alive}`)).toEqual(run(`r-${alive}`, alive));
    expect((await store.getTask(`t-${alive}`))!.state).toBe("working");
    await lease.release(held);
  });
});

describe("durable object: reads served by their indexes", () => {
  // SQLite's plan of the very statements the store sends (EXPLAIN QUERY PLAN in the object).
  const plan = (query: string, bindings: (string | number | null)[]) =>
    remote<{ plan(query: string, bindings: (string | number | null)[]): Promise<string[]> }>(mf, "storeObject").plan(query, bindings);
  const step = (steps: string[], table: string) => steps.find((s) => new RegExp(`^(SEARCH|SCAN) ${table}\\b`).test(s));

  // Every 30 s; finished tasks are kept for A2A_TASK_TTL_S.
  it("the settling sweep goes through tasks_open, the index of the tasks not finished", async () => {
    const steps = await plan(`SELECT body FROM tasks WHERE ${STRANDED_WHERE}`, ["2026-01-01T00:00:00.000Z", null, null, null, null, 100]);
    expect(step(steps, "tasks")).toMatch(/USING INDEX tasks_open\b/);
  });

  // SQLite plans without the bindings: a filter written `(?1 IS NULL OR thread_id = ?1)` read
  // every approval (SCAN approvals) and sorted them.
  it("a thread's approvals, a run's and a caller's threads are read through their indexes", async () => {
    const byThread = approvalListQuery({ thread_id: "t", limit: 20, offset: 0 });
    expect(step(await plan(byThread.sql, byThread.bindings), "approvals")).toMatch(/USING INDEX approvals_by_thread\b/);
    const byRun = approvalListQuery({ run_id: "r", visibleTo: { requester: "alice", roles: ["ops"] }, limit: 20, offset: 0 });
    expect(step(await plan(byRun.sql, byRun.bindings), "approvals")).toMatch(/USING INDEX approvals_by_run\b/);
    const threads = threadListQuery({ owner: "alice", limit: 20, offset: 0 });
    expect(step(await plan(threads.sql, threads.bindings), "threads")).toMatch(/USING INDEX threads_by_owner\b/);
  });
});
