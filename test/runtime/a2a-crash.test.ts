/**
 * A replica killed with SIGKILL at a random point right after the decision on an input-required
 * A2A task, sent over A2A on the task or in the web page (HTTP), a replica process each round:
 * the task never stays waiting or working.
 * Once the survivor has carried the decision out (or marked its outcome unknown), the dead run is
 * marked lost and the settling sweep has looked, the task has finished: completed with the
 * outcome of the run that carried the decision out, or failed where the dead process was running
 * it (spec 3.3). The call goes out at most once, and once when recorded sent.
 *
 * Needs the PostgreSQL at 127.0.0.1:5432 (user postgres, database test, trust auth), or
 * TEST_SQLDB_DSN, and a built dist/ (`npx tsup --silent`) for the child replica.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PostgresAdapters } from "../../src/store/postgres/index.js";
import { KEY, makeApp, type TestApp, waitFor } from "../helpers.js";
import { crashReplicas, LEASE } from "../support/crash-replicas.js";
import { createOrder, GATED, ordersPolicy } from "../support/orders.js";
import { TEST_DSN as DSN } from "../support/postgres.js";

type Json = Record<string, any>;
const ROUNDS = 12;
const { pg, upstream, sentFor, spawn: spawnChild } = crashReplicas();

let n = 0;
/** One A2A JSON-RPC call (protocol 1.0) to `send`, an app's fetch or a child's address. */
async function rpc(send: (r: Request) => Promise<Response>, method: string, params: Json): Promise<Json> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++n, method, params });
  const res = await send(new Request("http://test/a2a/app", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" }, body }));
  return (await res.json()) as Json;
}
const over = (base: string) => (request: Request) => fetch(new URL(new URL(request.url).pathname, base), request);
const message = (parts: Json[], extra: Json = {}) => ({ message: { messageId: `m-${++n}`, role: "ROLE_USER", parts, ...extra } });
const decision = (approval: Json, taskId: string) => message([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { taskId });

/** Approves over A2A on the task, or in the web page (POST /threads/{id}/approvals/{id}); answers once the reply has been read. */
async function decide(send: (r: Request) => Promise<Response>, viaA2A: boolean, task: Json, approval: Json): Promise<void> {
  if (viaA2A) {
    expect((await rpc(send, "SendMessage", decision(approval, task.id))).error).toBeUndefined();
    return;
  }
  const body = JSON.stringify({ decision: "approve", digest: approval.digest });
  const res = await send(new Request(`http://test/threads/${task.contextId}/approvals/${approval.approval_id}`, { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" }, body }));
  expect(res.status).toBe(200);
  await res.text();
}

describe("kill -9 shortly after the decision on an A2A task", () => {
  let schema: string;
  let survivor: TestApp;
  /** Runs the settling sweep only, on a clock `ahead` ms in the future (the sweep waits for 30 s of stillness). */
  let settler: TestApp;
  const clock = { ahead: 0, now: () => Date.now() + clock.ahead };
  let h: PostgresAdapters;

  beforeAll(async () => {
    schema = pg.fresh();
    const env = { CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "ERROR" };
    const options = { sqlSchema: schema, policyText: ordersPolicy(), tools: [createOrder], leaseTimings: LEASE };
    survivor = await pg.track(makeApp(env, { ...options, sweepIntervalMs: 100 }));
    settler = await pg.track(makeApp(env, { ...options, clock, intervalJobs: false }));
    h = await pg.handle(schema);
  });

  it(`${ROUNDS} rounds: the task finishes, completed or failed, and the call goes out at most once`, async () => {
    const seen: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const { child, base } = await spawnChild(schema);
      const waiting = (await rpc(over(base), "SendMessage", message([{ text: GATED }]))).result.task as Json;
      expect(waiting.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
      const approval = waiting.status.message.parts.find((p: Json) => p.data?.type === "approval_request").data.approval as Json;

      // The decision goes out, over A2A or in the web page; the process dies in the next 0-60 ms.
      const viaA2A = round % 2 === 0;
      const answered = decide(over(base), viaA2A, waiting, approval).catch(() => "cut");
      await new Promise((r) => setTimeout(r, Math.random() * 60));
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
      await answered;

      const pending = (await h.store.getApproval(approval.approval_id))!.status === "pending";
      // Nothing was recorded: the requester decides again, on the replica that is still up.
      if (pending) await decide(survivor.fetch, viaA2A, waiting, approval);
      // The survivor carries the decision out once the dead replica's lease lapses.
      await waitFor(async () => (await h.store.getApproval(approval.approval_id))!.outcome !== null && (await h.store.threadBlockers(waiting.contextId)).due === null, 10_000);
      // The dead run is marked lost (the job waits a minute more; the lease has lapsed already).
      await waitFor(async () => (await h.store.markLostRuns(0), (await h.store.listRuns(waiting.contextId)).every((r) => r.status !== "running")), 10_000);
      for (const ahead of [31_000, 62_000]) {
        clock.ahead = ahead;
        await settler.jobs.find((j) => j.name === "settling A2A tasks")!.run();
      }
      clock.ahead = 0;

      const task = (await h.store.getTask(waiting.id))!;
      const outcome = (await h.store.getApproval(approval.approval_id))!.outcome;
      const sent = sentFor(approval.approval_id);
      const key = `${viaA2A ? "a2a" : "http"} ${pending ? "retried" : "recorded"} ${outcome} ${task.state}`;
      seen[key] = (seen[key] ?? 0) + 1;
      expect(["completed", "failed"], `round ${round}: ${key}`).toContain(task.state);
      expect(sent, `round ${round}: upstream requests`).toBeLessThanOrEqual(1);
      if (outcome === "sent") expect(sent, `round ${round}`).toBe(1);
      else expect(outcome, `round ${round}`).toBe("unknown");
    }
    console.log("kill -9 after the decision on an A2A task:", JSON.stringify(seen));
  }, 180_000);
});
