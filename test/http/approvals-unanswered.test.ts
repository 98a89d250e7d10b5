/**
 * An approved call that was claimed but never answered (memory store, one replica, a recording
 * upstream): a run that stalls past its thread's lease between the claim and the send does not
 * send it, and a call whose upstream never answers is marked `unknown`. Either way the call is
 * never sent again, and the thread says a person should check with the API.
 */
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { chat, get, makeApp, parseSse, post, waitFor, type TestApp } from "../helpers.js";
import { createOrder, ordersPolicy, pauseOn } from "../support/orders.js";
import { created, recordingUpstream } from "../support/upstream.js";

/** Answers at once, except under /silent/, which it never answers. */
const upstream = recordingUpstream((res: ServerResponse) => (res.req.url?.startsWith("/silent/") ? undefined : created(res)));
const sentFor = (approvalId: string) => upstream.hits.filter((h) => h.headers["idempotency-key"] === approvalId).length;

/** A short lease; no sweep to speak of, so the decider itself resumes the run (and streams it). */
const QUICK = { leaseTimings: { renewMs: 200, ttlMs: 1_000 }, sweepIntervalMs: 60_000 };

/** The memory store, with `claimApprovalExecution` made to hold the event loop for `stall.ms` after it (a stopped or starved process). */
function stallingStore(stall: { ms: number }): Store {
  const store = createMemoryStore();
  const claim = store.claimApprovalExecution.bind(store);
  store.claimApprovalExecution = async (...args) => {
    const claimed = await claim(...args);
    const until = performance.now() + stall.ms;
    while (performance.now() < until) {
      // nothing runs meanwhile: not the run's timers, not its lease renewal
    }
    return claimed;
  };
  return store;
}

async function approvalOf(app: TestApp, thread: string, id: string): Promise<Record<string, unknown>> {
  const res = await app.fetch(get(`/threads/${thread}/approvals`));
  return ((await res.json()) as Record<string, unknown>[]).find((a) => a.approval_id === id)!;
}

async function toolResults(app: TestApp, thread: string): Promise<string[]> {
  const res = await app.fetch(get(`/threads/${thread}/messages`));
  const messages = (await res.json()) as { role: string; content: string }[];
  return messages.filter((m) => m.role === "tool").map((m) => m.content);
}

describe("an approved call claimed and never answered", () => {
  it("is not sent by a run that stalled past its thread's lease after the claim; the next resume reads it as unknown and sends nothing", async () => {
    const stall = { ms: 0 };
    const app = await makeApp({ ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" }, { storage: async (_s, { clock }) => ({ store: stallingStore(stall), lease: createMemoryLease(clock) }), policyText: ordersPolicy(), tools: [createOrder], ...QUICK });
    try {
      const thread = "stalled";
      const id = (await pauseOn(app, thread)).approval.approval_id as string;
      stall.ms = 1_500; // past the lease's 1 s
      const decided = parseSse(await (await app.fetch(post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }))).text());
      stall.ms = 0;
      // The resumed run stops as the lease's loser (7.2 unavailable), and says nothing was done for the model.
      expect(decided.at(-1)).toMatchObject({ event: "error", data: { code: "unavailable" } });
      expect(sentFor(id)).toBe(0);
      // The next holder of the thread resumes the run first (a chat, answered busy meanwhile): the
      // claimed call is never sent blindly, and says so.
      expect((await chat(app, { message: "and now?", thread_id: thread })).res.status).toBe(409);
      await waitFor(async () => (await approvalOf(app, thread, id)).outcome === "unknown", 8_000);
      await waitFor(async () => (await toolResults(app, thread)).some((c) => c.includes("may or may not have reached the API")), 8_000);
      await new Promise((r) => setTimeout(r, 300));
      expect(sentFor(id)).toBe(0);
    } finally {
      await app.close();
    }
  });

  it("whose upstream never answers ends as unknown: the tool reads that it may have reached the API and is not sent again", async () => {
    const app = await makeApp({ ORDERS_URL: `${upstream.base}/silent`, LOG_LEVEL: "WARNING" }, { policyText: ordersPolicy().replace("auth: none", "auth: none\n    timeouts_ms: { read: 500 }"), tools: [createOrder], sweepIntervalMs: 60_000 });
    try {
      const thread = "silent";
      const id = (await pauseOn(app, thread)).approval.approval_id as string;
      const decided = parseSse(await (await app.fetch(post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }))).text());
      expect(decided.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      const result = decided.find((e) => e.event === "tool.result")!.data as { result: string; is_error: boolean };
      expect(result.is_error).toBe(true);
      expect(result.result).toContain("did not answer within its timeout; the approved call may have reached the API and is not sent again");
      expect(sentFor(id)).toBe(1);
      expect(await approvalOf(app, thread, id)).toMatchObject({ status: "approved", outcome: "unknown" });
    } finally {
      await app.close();
    }
  });
});
