/**
 * workerd runs the background jobs from its cron trigger, never on intervals (issue 16): the
 * worker, built from src/runtime/worker.ts with setInterval counted (test/support/timer-counting-worker.ts),
 * starts none while it makes its app, serves a chat and runs a cron firing, with every job
 * switched on (retention and task TTL included). And the policy client's call deadlines, a timer
 * a call there, still fire.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { expect, it } from "vitest";
import { bundleWorker, startWorkerd } from "../support/workerd.js";
import { SMOKE_POLICY_PATH } from "./smoke.js";

it("the worker starts no interval: not when it makes its app, serves a chat, or runs the cron trigger", async () => {
  const script = await bundleWorker("test/support/timer-counting-worker.ts");
  const mf = await startWorkerd(script, {
    bindings: { API_KEY: "k", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", RETENTION_DAYS: "1", A2A_TASK_TTL_S: "60" },
    unsafeTriggerHandlers: true,
  });
  try {
    const intervals = async () => ((await (await mf.dispatchFetch("http://localhost/__intervals")).json()) as { intervals: number }).intervals;
    const chat = await mf.dispatchFetch("http://localhost/chat", {
      method: "POST",
      headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
      body: JSON.stringify({ message: "hello" }),
    });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain("echo: hello");
    const fired = await mf.dispatchFetch("http://localhost/cdn-cgi/handler/scheduled?cron=*+*+*+*+*");
    expect(fired.status).toBe(200);
    await fired.arrayBuffer();
    expect(await intervals()).toBe(0);
  } finally {
    await mf.dispose();
  }
}, 30_000);

/**
 * On workerd each call's read deadline has a timer of its own (a shared one could fire in a request
 * that has ended): a call to an upstream that never answers fails at its `timeouts_ms.read`.
 */
it("a call to an upstream that never answers fails at its read timeout (a timer a call)", async () => {
  const hanging = createServer(() => {});
  await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
  const script = await bundleWorker("test/support/smoke-worker.ts", { "agent-service": resolve("src/index.ts") });
  const policy = readFileSync(SMOKE_POLICY_PATH, "utf8").replace("    token_env: TICKETS_API_TOKEN\n", "    token_env: TICKETS_API_TOKEN\n    timeouts_ms: {connect: 1000, read: 300}\n");
  expect(policy).toContain("read: 300");
  const mf = await startWorkerd(script, {
    bindings: {
      API_KEY: "k",
      MODEL_PROVIDER: "fake",
      MODEL_NAME: "fake",
      API_POLICY: policy,
      TICKETS_API_URL: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/api`,
      TICKETS_API_TOKEN: "tickets-token",
    },
  });
  try {
    const started = Date.now();
    const chat = await mf.dispatchFetch("http://localhost/chat", {
      method: "POST",
      headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
      body: JSON.stringify({ message: '/call list_tickets {"limit":2}\n/answer listed' }),
    });
    expect(chat.status).toBe(200);
    const text = await chat.text();
    expect(text).toContain("did not answer within its timeout");
    expect(text).toContain('"status":"ok"');
    expect(Date.now() - started).toBeLessThan(10_000);
  } finally {
    await mf.dispose();
    hanging.closeAllConnections();
    await new Promise<void>((resolve) => hanging.close(() => resolve()));
  }
}, 30_000);
