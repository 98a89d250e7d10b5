/**
 * Work a run leaves going after its stream ended, on workerd: the A2A task waiting on an approval
 * takes the outcome of the run the decision resumed (spec 3.3), which happens after the deciding
 * request's response has ended. workerd cuts a request's I/O once its response and its waitUntil
 * work are done (a PostgreSQL query is cut mid-way: the task stayed input-required), so the
 * worker hands App.settled() to waitUntil. The example tools' worker (test/support/smoke-worker.ts)
 * with a recording upstream, on the Durable Objects and on PostgreSQL (a database of its own).
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSse } from "../helpers.js";
import { freshDatabase } from "../support/postgres.js";
import { recordingUpstream } from "../support/upstream.js";
import { bundleWorker, hyperdriveTo, startWorkerd } from "../support/workerd.js";
import { SMOKE_KEY, SMOKE_POLICY_PATH } from "./smoke.js";

const upstream = recordingUpstream();
let database: Awaited<ReturnType<typeof freshDatabase>>;
beforeAll(async () => {
  database = await freshDatabase("followups");
});
afterAll(() => database?.drop());

function onWorker(name: string, options: () => Parameters<typeof startWorkerd>[1]) {
  describe(`workerd, ${name}`, () => {
    let mf: Miniflare;
    beforeAll(async () => {
      const script = await bundleWorker("test/support/smoke-worker.ts", { "agent-service": resolve("src/index.ts") });
      mf = await startWorkerd(script, {
        bindings: {
          API_KEY: SMOKE_KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", API_POLICY: readFileSync(SMOKE_POLICY_PATH, "utf8"),
          TICKETS_API_URL: `${upstream.base}/api`, TICKETS_API_TOKEN: "t",
        },
        ...options(),
      });
    });
    afterAll(async () => {
      await mf?.dispose();
    });

    const send = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      mf.dispatchFetch(`http://localhost${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${SMOKE_KEY}`, "Content-Type": "application/json", ...headers },
        body: JSON.stringify(body),
      }) as unknown as Promise<Response>;
    const rpc = async (method: string, params: unknown) =>
      (await (await send("/a2a/app", { jsonrpc: "2.0", id: 1, method, params }, { "A2A-Version": "1.0" })).json()) as { result: Record<string, any> };

    it("an A2A task waiting on an approval decided over HTTP completes with the resumed run", async () => {
      upstream.hits.length = 0;
      const sent = await rpc("SendMessage", { message: { messageId: `m-${Date.now()}`, role: "ROLE_USER", parts: [{ text: '/call create_ticket {"title":"from a2a"}' }] } });
      const task = sent.result.task;
      expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
      const data = task.status.message.parts.find((p: { data?: unknown }) => p.data).data as { approval: { approval_id: string; thread_id: string } };
      const { approval_id, thread_id } = data.approval;

      const decided = await send(`/threads/${thread_id}/approvals/${approval_id}`, { decision: "approve" });
      expect(decided.status).toBe(200);
      expect(parseSse(await decided.text()).at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      expect(upstream.hits.map((h) => [h.method, h.url])).toEqual([["POST", "/api/tickets"]]);

      // The settling follows the resumed run's end: give it a moment, then it must have happened.
      // A settle cut with the request's I/O never happens (the task stays input-required: the
      // sweep that would mend it runs 30 s later, by cron), so the bound only allows for a loaded
      // machine: 3 s was once too short in a full `npm test` (it passed alone and under load since).
      await expect.poll(async () => (await rpc("GetTask", { id: task.id })).result.status.state, { timeout: 10_000, interval: 100 }).toBe("TASK_STATE_COMPLETED");
    });
  });
}

onWorker("durable objects", () => ({}));
onWorker("postgres", () => hyperdriveTo(database.dsn));
