/**
 * The ThreadLease contract (src/store/ports.ts), as a suite every adapter runs. The adapter is
 * made with a clock the suite advances; expiry is checked well clear of the exact ttl boundary.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LeaseHandle, ThreadLease } from "../../src/store/ports.js";

export interface LeaseFixture {
  lease: ThreadLease;
  /** Moves the adapter's time on (a real wait for adapters timed by their own clock). */
  clock: { advance(ms: number): void | Promise<void> };
  /** Real milliseconds per suite millisecond (adapters that cannot fake time run the suite faster). */
  scale?: number;
  cleanup?(): Promise<void>;
}

const TTL = 10_000;

export function describeLeaseContract(name: string, make: () => Promise<LeaseFixture>): void {
  describe(`${name}: ThreadLease contract`, () => {
    let fixture: LeaseFixture;
    let lease: ThreadLease;
    let threadId: string;
    const advance = async (ms: number) => fixture.clock.advance(ms * (fixture.scale ?? 1));
    let ttl = TTL;

    beforeEach(async () => {
      fixture = await make();
      lease = fixture.lease;
      ttl = TTL * (fixture.scale ?? 1);
      threadId = `lease-${crypto.randomUUID()}`;
    });
    afterEach(async () => {
      await fixture.cleanup?.();
    });

    it("gives exactly one of 20 concurrent acquires a handle", async () => {
      const holders = Array.from({ length: 20 }, (_, i) => `holder-${i}`);
      const results = await Promise.all(holders.map((h) => lease.acquire(threadId, h, ttl)));
      const handles = results.filter((h): h is LeaseHandle => h !== null);
      expect(handles).toHaveLength(1);
      const handle = handles[0]!;
      expect(handle.threadId).toBe(threadId);
      expect(holders).toContain(handle.holder);
      expect(results.indexOf(handle)).toBe(holders.indexOf(handle.holder));
      expect(Number.isFinite(handle.generation)).toBe(true);
      expect(await lease.isHeld(threadId)).toBe(true);
    });

    it("refuses a second acquire while the lease is unexpired", async () => {
      const first = await lease.acquire(threadId, "a", ttl);
      expect(first).not.toBeNull();
      await advance(TTL / 2);
      expect(await lease.acquire(threadId, "b", ttl)).toBeNull();
      expect(await lease.isHeld(threadId)).toBe(true);
    });

    it("keeps threads apart", async () => {
      const other = `${threadId}-other`;
      const a = await lease.acquire(threadId, "a", ttl);
      const b = await lease.acquire(other, "b", ttl);
      expect(a).not.toBeNull();
      expect(b).not.toBeNull();
      await lease.release(a!);
      expect(await lease.isHeld(threadId)).toBe(false);
      expect(await lease.isHeld(other)).toBe(true);
    });

    it("is not held before anyone acquires it", async () => {
      expect(await lease.isHeld(threadId)).toBe(false);
    });

    it("frees the thread once the ttl has passed", async () => {
      const handle = await lease.acquire(threadId, "a", ttl);
      expect(handle).not.toBeNull();
      await advance(TTL - 1000);
      expect(await lease.isHeld(threadId)).toBe(true);
      expect(await lease.acquire(threadId, "b", ttl)).toBeNull();
      await advance(2000);
      expect(await lease.isHeld(threadId)).toBe(false);
      expect(await lease.acquire(threadId, "b", ttl)).not.toBeNull();
    });

    it("renew extends the lease from now", async () => {
      const handle = (await lease.acquire(threadId, "a", ttl))!;
      await advance(TTL - 1000);
      expect(await lease.renew(handle, ttl)).toBe(true);
      // Past the first expiry, inside the renewed one.
      await advance(5000);
      expect(await lease.isHeld(threadId)).toBe(true);
      expect(await lease.acquire(threadId, "b", ttl)).toBeNull();
      expect(await lease.renew(handle, ttl)).toBe(true);
      await advance(TTL - 1000);
      expect(await lease.isHeld(threadId)).toBe(true);
      // Past the last renewal.
      await advance(2000);
      expect(await lease.isHeld(threadId)).toBe(false);
    });

    it("after expiry a new holder gets a greater generation and fences the old handle", async () => {
      const old = (await lease.acquire(threadId, "old", ttl))!;
      await advance(TTL + 1000);
      const fresh = await lease.acquire(threadId, "new", ttl);
      expect(fresh).not.toBeNull();
      expect(fresh!.holder).toBe("new");
      expect(fresh!.generation).toBeGreaterThan(old.generation);

      expect(await lease.renew(old, ttl)).toBe(false);
      await lease.release(old);
      expect(await lease.isHeld(threadId)).toBe(true);
      expect(await lease.acquire(threadId, "third", ttl)).toBeNull();
      expect(await lease.renew(fresh!, ttl)).toBe(true);
    });

    it("release frees the thread for the next holder, with a greater generation", async () => {
      const first = (await lease.acquire(threadId, "a", ttl))!;
      await lease.release(first);
      expect(await lease.isHeld(threadId)).toBe(false);
      expect(await lease.renew(first, ttl)).toBe(false);
      const second = await lease.acquire(threadId, "b", ttl);
      expect(second).not.toBeNull();
      expect(second!.generation).toBeGreaterThan(first.generation);
      // A second release of the old handle does not free the new holder.
      await lease.release(first);
      expect(await lease.isHeld(threadId)).toBe(true);
      await lease.release(second!);
      expect(await lease.isHeld(threadId)).toBe(false);
    });

    it("20 concurrent acquires after a release still give exactly one handle", async () => {
      const first = (await lease.acquire(threadId, "a", ttl))!;
      await lease.release(first);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => lease.acquire(threadId, `h${i}`, ttl)));
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });
  });
}
