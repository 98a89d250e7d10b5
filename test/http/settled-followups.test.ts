/**
 * App.settled() waits for all that follows a resumed run, the look-up of the paused run included,
 * not only for the settling a listener hands on after it. The workerd entry hands settled() to
 * waitUntil, and workerd ends a request's I/O when it resolves: a look-up left out of it let a
 * settle be cut under load (the A2A task stayed input-required until the cron sweep mended it).
 * Here the store's getRun answers after 300 ms, far past settled()'s 20 ms look, so a settled()
 * that does not count the look-up resolves with the task still waiting.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/index.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { KEY, makeApp, post, type TestApp } from "../helpers.js";
import { orderAfter, ordersPolicy } from "../support/orders.js";
import { recordingUpstream } from "../support/upstream.js";

type Json = Record<string, any>;
const upstream = recordingUpstream();

let n = 0;
async function rpc(a: TestApp, method: string, params: Json): Promise<Json> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++n, method, params });
  const res = await a.fetch(new Request("http://test/a2a/app", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" }, body }));
  const json = (await res.json()) as Json;
  expect(json.error).toBeUndefined();
  return json.result;
}

/** The memory store, with getRun answering `delayMs` late while `slow.on`. */
function slowGetRun(store: Store, delayMs: number, slow: { on: boolean }): Store {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key !== "getRun" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        if (slow.on) await new Promise((r) => setTimeout(r, delayMs));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe("App.settled() after a decision over HTTP", () => {
  it("resolves only once the A2A task waiting on the decision has taken the resumed run's outcome", async () => {
    const slow = { on: false };
    const store = slowGetRun(createMemoryStore(), 300, slow);
    const a = await makeApp(
      { ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" },
      { policyText: ordersPolicy({ timeoutS: 60 }), tools: [orderAfter(0, false)], storage: async (_s, { clock }) => ({ store, lease: createMemoryLease(clock) }), sweepIntervalMs: 600_000 },
    );
    try {
      const task = (await rpc(a, "SendMessage", { message: { messageId: `m-${++n}`, role: "ROLE_USER", parts: [{ text: '/call create_order {"item":"book"}' }] } })).task as Json;
      expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
      const approval = task.status.message.parts.find((p: Json) => p.data?.type === "approval_request").data.approval as Json;

      slow.on = true;
      const decided = await a.fetch(post(`/threads/${task.contextId}/approvals/${approval.approval_id}`, { decision: "approve", digest: approval.digest }));
      expect(await decided.text()).toContain('"status":"ok"');
      await a.settled();
      slow.on = false;
      // No waiting here: what settled() waited for is done.
      expect(((await rpc(a, "GetTask", { id: task.id })) as Json).status.state).toBe("TASK_STATE_COMPLETED");
    } finally {
      await a.close();
    }
  });
});
