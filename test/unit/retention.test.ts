/**
 * Retention (RETENTION_DAYS, spec 2.10): a sweep goes until no idle thread is left, in batches,
 * skipping busy ones, and the service sweeps at start, not an hour later.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/observability/logger.js";
import { randomIds } from "../../src/ids.js";
import { sweepRetention } from "../../src/runs/retention.js";
import { threadLeases } from "../../src/runs/leases.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { makeApp, waitFor } from "../helpers.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-10T00:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00");

async function storeWithThreads(idle: number, fresh: number) {
  const store = createMemoryStore();
  for (let i = 0; i < idle; i++) await store.createThread({ thread_id: `old-${i}`, owner: "o", actor: null, created_at: iso(T0 - 5 * DAY), updated_at: iso(T0 - 5 * DAY) });
  for (let i = 0; i < fresh; i++) await store.createThread({ thread_id: `new-${i}`, owner: "o", actor: null, created_at: iso(T0), updated_at: iso(T0) });
  return store;
}

describe("retention", () => {
  it("one sweep deletes every idle thread, 250 of them in batches, and keeps busy and fresh ones", async () => {
    const store = await storeWithThreads(250, 3);
    const clock = { now: () => T0 };
    const port = createMemoryLease(clock);
    const leases = threadLeases(port, { instanceId: "t", ids: randomIds, timings: { renewMs: 1_000, ttlMs: 10_000 } });
    const busy = (await port.acquire("old-7", "another-run", 10_000))!;
    expect(await sweepRetention({ store, leases, clock, logger: silentLogger }, 1)).toBe(249);
    const left = (await store.listThreads({ limit: 100, offset: 0 })).map((t) => t.thread_id).sort();
    expect(left).toEqual(["new-0", "new-1", "new-2", "old-7"]);
    await port.release(busy);
    expect(await sweepRetention({ store, leases, clock, logger: silentLogger }, 1)).toBe(1);
  });

  it("the service sweeps at start", async () => {
    const store = await storeWithThreads(120, 0);
    const app = await makeApp({ RETENTION_DAYS: "1" }, { store, clock: { now: () => T0 } });
    try {
      await waitFor(async () => (await store.listThreads({ limit: 10, offset: 0 })).length === 0, 2_000);
    } finally {
      await app.close();
    }
  });
});
