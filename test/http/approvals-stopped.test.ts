/**
 * An approved call whose run is stopped around the claim (memory store, one replica, a recording
 * upstream): a run stopped before the claim claims nothing, so the call stays approved and unsent
 * and the next run sends it once; a run stopped while it claims sends the claimed call once and
 * keeps its answer. Either way the call is never lost as "may have reached the API".
 */
import { describe, expect, it } from "vitest";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { get, makeApp, post, readUntil, type TestApp, waitFor } from "../helpers.js";
import { orderAfter, ordersPolicy, pauseOn } from "../support/orders.js";
import { recordingUpstream } from "../support/upstream.js";

const upstream = recordingUpstream();
const sentFor = (approvalId: string) => upstream.hits.filter((h) => h.headers["idempotency-key"] === approvalId).length;

/** create_order after 600 ms of the tool's own work, which does not watch the run's stop. */
const busyOrder = orderAfter(600, false);

async function approvalOf(app: TestApp, thread: string, id: string): Promise<Record<string, unknown>> {
  const res = await app.fetch(get(`/threads/${thread}/approvals`));
  return ((await res.json()) as Record<string, unknown>[]).find((a) => a.approval_id === id)!;
}

/** Approves in the web page and leaves as soon as the resumed run has started (spec 3.1: that cancels it). */
async function approveAndLeave(app: TestApp, thread: string, id: string): Promise<void> {
  const res = await app.fetch(post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }));
  const { reader } = await readUntil(res, (events) => events.some((e) => e.event === "message.start"));
  await reader.cancel();
}

describe("an approved call whose run is stopped around the claim", () => {
  it("a run stopped before the claim claims nothing: the call stays approved and unsent, and the sweep's run sends it once", async () => {
    const app = await makeApp({ ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" }, { policyText: ordersPolicy(), tools: [busyOrder], sweepIntervalMs: 300 });
    try {
      const thread = "stopped-before-claim";
      const id = (await pauseOn(app, thread)).approval.approval_id as string;
      await approveAndLeave(app, thread, id);
      // The sweep's run waits for the busy tool too: one send, its answer kept.
      await waitFor(async () => (await approvalOf(app, thread, id)).outcome === "sent", 8_000);
      expect(sentFor(id)).toBe(1);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(sentFor(id)).toBe(1);
    } finally {
      await app.close();
    }
  });

  it("a run stopped while it claims sends the claimed call once and keeps its answer; no later run sends it again", async () => {
    const gate = { ms: 0 };
    const store = createMemoryStore();
    const claim = store.claimApprovalExecution.bind(store);
    store.claimApprovalExecution = async (...args) => {
      const claimed = await claim(...args);
      await new Promise((r) => setTimeout(r, gate.ms));
      return claimed;
    };
    const app = await makeApp(
      { ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" },
      { storage: async (_s, { clock }) => ({ store, lease: createMemoryLease(clock) }), policyText: ordersPolicy(), tools: [busyOrder], sweepIntervalMs: 300 },
    );
    try {
      const thread = "stopped-while-claiming";
      const id = (await pauseOn(app, thread)).approval.approval_id as string;
      gate.ms = 1_000;
      const res = await app.fetch(post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }));
      const { reader } = await readUntil(res, (events) => events.some((e) => e.event === "message.start"));
      // Leave while the claim is on its way: after the tool's 600 ms of work, before the claim answers.
      await new Promise((r) => setTimeout(r, 800));
      await reader.cancel();
      gate.ms = 0;
      await waitFor(async () => (await approvalOf(app, thread, id)).outcome === "sent", 8_000);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(sentFor(id)).toBe(1);
      expect((await approvalOf(app, thread, id)).outcome).toBe("sent");
    } finally {
      await app.close();
    }
  });
});
