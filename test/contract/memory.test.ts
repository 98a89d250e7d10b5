import { expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { describeLeaseContract } from "./lease.js";
import { describeStoreContract } from "./store.js";

it("answers ping", async () => {
  await expect(createMemoryStore().ping()).resolves.toBeUndefined();
});

// The memory store takes leases through the port claimThread and finishRun are given.
describeStoreContract(
  "memory",
  async () => ({ store: createMemoryStore(), lease: createMemoryLease(systemClock), spare: async () => createMemoryStore() }),
  { sharedByProcesses: false },
);

describeLeaseContract("memory", async () => {
  let t = Date.UTC(2024, 0, 1);
  const clock = {
    now: () => t,
    advance(ms: number): void {
      t += ms;
    },
  };
  return { lease: createMemoryLease(clock), clock };
});
