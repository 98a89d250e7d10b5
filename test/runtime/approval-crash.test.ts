/**
 * A replica killed with SIGKILL at a random point right after a person approves (20 rounds, a
 * replica process each): no approved call is lost silently and none is sent twice. After each
 * kill the surviving replica's recovery sweep carries the decision out, or, where the dead
 * process may have sent the call before its answer came back, marks the outcome unknown and
 * sends nothing more. A kill that lands before the decision was recorded leaves the approval
 * pending, and the person's retry on the survivor is carried out once.
 *
 * Needs the PostgreSQL at 127.0.0.1:5432 (user postgres, database test, trust auth), or
 * TEST_SQLDB_DSN, and a built dist/ (`npx tsup --silent`) for the child replica.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { PostgresAdapters } from "../../src/store/postgres/index.js";
import { get, makeApp, parseSse, post, waitFor, type TestApp } from "../helpers.js";
import { crashReplicas, LEASE } from "../support/crash-replicas.js";
import { createOrder, GATED, ordersPolicy } from "../support/orders.js";
import { TEST_DSN as DSN } from "../support/postgres.js";

const ROUNDS = 20;
const { pg, upstream, sentFor, spawn: spawnChild } = crashReplicas();

const over = (base: string, request: Request) => fetch(new URL(new URL(request.url).pathname, base), request);

describe("kill -9 shortly after an approve", () => {
  let schema: string;
  let survivor: TestApp;
  let h: PostgresAdapters;

  beforeAll(async () => {
    schema = pg.fresh();
    survivor = await pg.track(
      makeApp(
        { CHECKPOINTER: "sql", SQLDB_DSN: DSN, ORDERS_URL: upstream.base, LOG_LEVEL: "ERROR" },
        { sqlSchema: schema, policyText: ordersPolicy(), tools: [createOrder], leaseTimings: LEASE, sweepIntervalMs: 100 },
      ),
    );
    h = await pg.handle(schema);
  });

  it(`${ROUNDS} rounds: every approved call is sent once or marked outcome unknown, never twice, never lost`, async () => {
    const seen = { decidedBeforeKill: 0, pendingAtKill: 0, sent: 0, unknown: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const thread = `crash-${round}`;
      const { child, base } = await spawnChild(schema);
      const paused = parseSse(await (await over(base, post("/chat", { message: GATED, thread_id: thread }))).text());
      expect(paused.at(-1)).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
      const id = (paused.at(-1)!.data.approval as { approval_id: string }).approval_id;

      // The approve goes out; the process dies somewhere in the next 0-60 ms.
      const answered = over(base, post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }))
        .then((res) => res.text())
        .catch(() => "cut");
      await new Promise((r) => setTimeout(r, Math.random() * 60));
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
      await answered;

      if ((await h.store.getApproval(id))!.status === "pending") {
        // Nothing was recorded: the person approves again, on the replica that is still up.
        seen.pendingAtKill++;
        const retry = await survivor.fetch(post(`/threads/${thread}/approvals/${id}`, { decision: "approve" }));
        expect(retry.status).toBe(200);
        await retry.text();
      } else seen.decidedBeforeKill++;

      // The survivor's recovery carries the decision out once the dead replica's lease lapses.
      await waitFor(async () => {
        const a = (await h.store.getApproval(id))!;
        return a.outcome !== null && (await h.store.threadBlockers(thread)).due === null;
      }, 10_000);
      await new Promise((r) => setTimeout(r, 300));
      const approval = (await h.store.getApproval(id))!;
      const sent = sentFor(id);
      expect(sent, `round ${round}: upstream requests`).toBeLessThanOrEqual(1);
      if (approval.outcome === "sent") {
        seen.sent++;
        expect(sent, `round ${round}`).toBe(1);
      } else {
        seen.unknown++;
        expect(approval.outcome, `round ${round}`).toBe("unknown");
        // The resumed run says so, where a person reads the thread.
        const messages = (await (await survivor.fetch(get(`/threads/${thread}/messages`))).json()) as { role: string; content: string }[];
        expect(messages.some((m) => m.role === "tool" && m.content.includes("may or may not have reached the API"))).toBe(true);
      }
    }
    console.log("kill -9 after approve:", JSON.stringify(seen));
    expect(seen.sent + seen.unknown).toBe(ROUNDS);
  }, 180_000);
});
