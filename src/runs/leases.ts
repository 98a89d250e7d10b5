/**
 * The thread lease (spec 8: one run per thread), taken in one place. Every holder is named
 * `<process>:<purpose>:<id>`, every lease lasts `ttlMs` and is renewed every `renewMs` by the run
 * that holds it. Runs own their lease until they end; everything else that needs a thread to
 * itself (deleting it, retention) holds it only around its work.
 */
import type { Ids } from "../ids.js";
import type { LeaseClaim, LeaseHandle, ThreadLease } from "../store/ports.js";

/** The lease is renewed this often and lasts this long (spec 8); tests may shorten both. */
export interface LeaseTimings {
  readonly renewMs: number;
  readonly ttlMs: number;
}
export const LEASE_TIMINGS: LeaseTimings = { renewMs: 5_000, ttlMs: 30_000 };

/** How often a waiting taker asks again. */
const POLL_MS = 25;

export interface ThreadLeases {
  readonly timings: LeaseTimings;
  /** The lease port itself, for the store's one-write claim and finish. */
  readonly port: ThreadLease;
  /** What claimThread needs to take the lease with the thread's first write. */
  claim(purpose: string): LeaseClaim;
  /** Takes the thread, waiting up to `waitMs` for its holder to let go; null if it did not. */
  take(threadId: string, purpose: string, waitMs?: number): Promise<LeaseHandle | null>;
  /** Extends the lease; false once it was lost (at once from a lease kept in this process). */
  renew(handle: LeaseHandle): Promise<boolean> | boolean;
  /** Lets the thread go; never throws (an unreleased lease expires on its own). */
  release(handle: LeaseHandle): Promise<void>;
}

export function threadLeases(port: ThreadLease, options: { readonly instanceId: string; readonly ids: Ids; readonly timings: LeaseTimings }): ThreadLeases {
  const { instanceId, timings } = options;
  // Unique per holder: the instance id is this process's (random at each start), the count its own.
  let seq = 0;
  const holder = (purpose: string) => {
    const name = `${instanceId}:${purpose}:${++seq}`;
    name.charCodeAt(0); // laid out in one piece (clock.ts isoTime says why)
    return name;
  };
  return {
    timings,
    port,
    claim: (purpose) => ({ port, holder: holder(purpose), ttlMs: timings.ttlMs }),
    async take(threadId, purpose, waitMs = 0) {
      const name = holder(purpose);
      const deadline = Date.now() + waitMs;
      for (;;) {
        const handle = await port.acquire(threadId, name, timings.ttlMs);
        if (handle || Date.now() >= deadline) return handle;
        await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(1, deadline - Date.now()))));
      }
    },
    renew: (handle) => port.renew(handle, timings.ttlMs),
    release: (handle) => port.release(handle).catch(() => {}),
  };
}

/**
 * Runs `work` holding the thread: the lease is let go when the work ends, whatever happens.
 * Resolves to "busy" when another holder has the thread (after waiting up to `waitMs`).
 */
export async function withThreadLease<T>(
  leases: ThreadLeases,
  threadId: string,
  purpose: string,
  work: (handle: LeaseHandle) => Promise<T>,
  waitMs = 0,
): Promise<T | "busy"> {
  const handle = await leases.take(threadId, purpose, waitMs);
  if (!handle) return "busy";
  try {
    return await work(handle);
  } finally {
    await leases.release(handle);
  }
}

/**
 * Hands a held lease to a run: if starting the run fails, the lease is let go; once started, the
 * run releases it when it ends.
 */
export async function handOver<T>(leases: ThreadLeases, handle: LeaseHandle, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    await leases.release(handle);
    throw error;
  }
}
