/** In-process thread lease: enough for one process; replicas need the Postgres lease. */
import type { Clock } from "../../clock.js";
import type { LeaseHandle, ThreadLease } from "../ports.js";

interface Held {
  holder: string;
  generation: number;
  expiresAt: number;
}

export function createMemoryLease(clock: Clock): ThreadLease {
  const held = new Map<string, Held>();
  let generation = 0;

  const current = (threadId: string): Held | undefined => {
    const h = held.get(threadId);
    if (h && h.expiresAt <= clock.now()) {
      held.delete(threadId);
      return undefined;
    }
    return h;
  };

  return {
    async acquire(threadId, holder, ttlMs) {
      if (current(threadId)) return null;
      const h = { holder, generation: ++generation, expiresAt: clock.now() + ttlMs };
      held.set(threadId, h);
      return { threadId, holder, generation: h.generation };
    },
    // At once (ThreadLease.renew says why).
    renew(handle: LeaseHandle, ttlMs) {
      const h = current(handle.threadId);
      if (!h || h.generation !== handle.generation) return false;
      h.expiresAt = clock.now() + ttlMs;
      return true;
    },
    async release(handle) {
      const h = held.get(handle.threadId);
      if (h && h.generation === handle.generation) held.delete(handle.threadId);
    },
    async isHeld(threadId) {
      return current(threadId) !== undefined;
    },
  };
}
