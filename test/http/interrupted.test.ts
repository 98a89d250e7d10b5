import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store, ThreadLease } from "../../src/store/ports.js";
import { makeApp, post, readUntil, waitFor, type TestApp } from "../helpers.js";

let app: TestApp;
let store: Store;
afterEach(async () => app?.close());

const metricsText = async () => (await app.fetch(new Request("http://test/metrics"))).text();

describe("interrupted runs", () => {
  it("a shutdown drain past its grace interrupts the run: the stream just ends and the record says interrupted", async () => {
    store = createMemoryStore();
    app = await makeApp({}, { store });
    const res = await app.fetch(post("/chat", { message: "/sleep 5000\nlong" }));
    const { reader, events } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    expect(app.activeRuns).toBe(1);
    await app.drain(50);
    let rest = "";
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value);
    }
    expect(rest).not.toContain("event: message.end");
    expect(rest).not.toContain("event: error");
    expect((await store.getRun(events[0]!.data.run_id))!.status).toBe("interrupted");
    expect(await metricsText()).toContain('agent_runs_total{status="interrupted"} 1');
    expect(app.activeRuns).toBe(0);
  });

  // A lease port may answer a renewal with a promise or at once (a lease kept in the process).
  it.each<[string, () => Promise<boolean> | boolean]>([
    ["a promise of false", () => Promise.resolve(false)],
    ["false at once", () => false],
    [
      "a throw at once",
      () => {
        throw new Error("lease store gone");
      },
    ],
  ])("a run that cannot renew its lease (%s) stops as interrupted before it writes again", async (_, refused) => {
    store = createMemoryStore();
    const inner = createMemoryLease(systemClock);
    let allowRenew = true;
    const lease: ThreadLease = { ...inner, renew: (h, ttl) => (allowRenew ? inner.renew(h, ttl) : refused()) };
    app = await makeApp({}, { store, lease, leaseTimings: { renewMs: 20, ttlMs: 1000 } });
    const res = await app.fetch(post("/chat", { message: "/sleep 400\nlater", thread_id: "lost" }));
    const { reader, events } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    allowRenew = false;
    const runId = events[0]!.data.run_id as string;
    await waitFor(async () => (await store.getRun(runId))?.status === "interrupted");
    const messages = await store.getMessages("lost");
    expect(messages.map((m) => m.role)).toEqual(["user"]);
    await reader.cancel();
  });

  it("the in-process lease answers a renewal at once, without a promise", async () => {
    const lease = createMemoryLease(systemClock);
    const handle = (await lease.acquire("t", "me", 1000))!;
    expect(lease.renew(handle, 1000)).toBe(true);
    await lease.release(handle);
    expect(lease.renew(handle, 1000)).toBe(false);
  });

  it("renews the lease while a run lasts longer than its ttl", async () => {
    store = createMemoryStore();
    app = await makeApp({}, { store, leaseTimings: { renewMs: 20, ttlMs: 400 } });
    // Several times the ttl, renewed every 20 ms (the margin keeps a loaded machine from flaking).
    const res = await app.fetch(post("/chat", { message: "/sleep 1300\nstill mine", thread_id: "kept" }));
    const text = await res.text();
    expect(text).toContain("echo: still mine");
    expect(text).toContain('"status":"ok"');
  });
});
