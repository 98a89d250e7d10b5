import { expect, it } from "vitest";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { describeLeaseContract } from "./lease.js";
import { describeStoreContract } from "./store.js";

it("answers ping", async () => {
  await expect(createMemoryStore().ping()).resolves.toBeUndefined();
});

describeStoreContract("memory", async () => ({ store: createMemoryStore() }));

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
