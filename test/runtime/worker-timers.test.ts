/**
 * workerd runs the background jobs from its cron trigger, never on intervals (issue 16): the
 * worker, built from src/runtime/worker.ts with setInterval counted (test/support/timer-counting-worker.ts),
 * starts none while it makes its app, serves a chat and runs a cron firing, with every job
 * switched on (retention and task TTL included).
 */
import { expect, it } from "vitest";
import { bundleWorker, startWorkerd } from "../support/workerd.js";

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
