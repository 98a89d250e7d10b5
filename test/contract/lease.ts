/**
 * The ThreadLease contract (src/store/ports.ts), as a suite every adapter runs. The adapter is
 * made with a clock the suite advances; expiry is checked well clear of the exact ttl boundary.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LeaseHandle, ThreadLease } from "../../src/store/ports.js";

export interface LeaseFixture {
  lease: ThreadLease;
  clock: { advance(ms: number): void };
  cleanup?(): Promise<void>;
}

const TTL = 10_000;

export function describeLeaseContract(name: string, make: () => Promise<LeaseFixture>): void {
  describe(`${name}: ThreadLease contract`, () => {
    let fixture: LeaseFixture;
    let lease: ThreadLease;
    let threadId: string;
    const advance = (ms: number) => fixture.clock.advance(ms);

    beforeEach(async () => {
      fixture = await make();
      lease = fixture.lease;
      threadId = `lease-${crypto.randomUUID()}`;
    });
    afterEach(async () => {
      await fixture.cleanup?.();
    });

    it("gives exactly one of 20 concurrent acquires a handle", async () => {
      const holders = Array.from({ length: 20 }, (_, i) => `holder-${i}`);
      const results = await Promise.all(holders.map((h) => lease.acquire(threadId, h, TTL)));
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
      const first = await lease.acquire(threadId, "a", TTL);
      expect(first).not.toBeNull();
      advance(TTL / 2);
      expect(await lease.acquire(threadId, "b", TTL)).toBeNull();
      expect(await lease.isHeld(threadId)).toBe(true);
    });

    it("keeps threads apart", async () => {
      const other = `${threadId}-other`;
      const a = await lease.acquire(threadId, "a", TTL);
      const b = await lease.acquire(other, "b", TTL);
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
      const handle = await lease.acquire(threadId, "a", TTL);
      expect(handle).not.toBeNull();
      advance(TTL - 1000);
      expect(await lease.isHeld(threadId)).toBe(true);
      expect(await lease.acquire(threadId, "b", TTL)).toBeNull();
      advance(2000);
      expect(await lease.isHeld(threadId)).toBe(false);
      expect(await lease.acquire(threadId, "b", TTL)).not.toBeNull();
    });

    it("renew extends the lease from now", async () => {
      const handle = (await lease.acquire(threadId, "a", TTL))!;
      advance(TTL - 1000);
      expect(await lease.renew(handle, TTL)).toBe(true);
      // Past the first expiry, inside the renewed one.
      advance(5000);
      expect(await lease.isHeld(threadId)).toBe(true);
      expect(await lease.acquire(threadId, "b", TTL)).toBeNull();
      expect(await lease.renew(handle, TTL)).toBe(true);
      advance(TTL - 1000);
      expect(await lease.isHeld(threadId)).toBe(true);
      // Past the last renewal.
      advance(2000);
      expect(await lease.isHeld(threadId)).toBe(false);
    });

    it("after expiry a new holder gets a greater generation and fences the old handle", async () => {
      const old = (await lease.acquire(threadId, "old", TTL))!;
      advance(TTL + 1000);
      const fresh = await lease.acquire(threadId, "new", TTL);
      expect(fresh).not.toBeNull();
      expect(fresh!.holder).toBe("new");
      expect(fresh!.generation).toBeGreaterThan(old.generation);

      expect(await lease.renew(old, TTL)).toBe(false);
      await lease.release(old);
      expect(await lease.isHeld(threadId)).toBe(true);
      expect(await lease.acquire(threadId, "third", TTL)).toBeNull();
      expect(await lease.renew(fresh!, TTL)).toBe(true);
    });

    it("release frees the thread for the next holder, with a greater generation", async () => {
      const first = (await lease.acquire(threadId, "a", TTL))!;
      await lease.release(first);
      expect(await lease.isHeld(threadId)).toBe(false);
      expect(await lease.renew(first, TTL)).toBe(false);
      const second = await lease.acquire(threadId, "b", TTL);
      expect(second).not.toBeNull();
      expect(second!.generation).toBeGreaterThan(first.generation);
      // A second release of the old handle does not free the new holder.
      await lease.release(first);
      expect(await lease.isHeld(threadId)).toBe(true);
      await lease.release(second!);
      expect(await lease.isHeld(threadId)).toBe(false);
    });

    it("20 concurrent acquires after a release still give exactly one handle", async () => {
      const first = (await lease.acquire(threadId, "a", TTL))!;
      await lease.release(first);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => lease.acquire(threadId, `h${i}`, TTL)));
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });
  });
}
