/**
 * The thread lease of one thread, as its Durable Object keeps it (one object per thread id): pure
 * steps from a state and the object's clock to the next state, so they are tested without
 * workerd. The object applies each step in one event, which is what makes acquire and renew
 * atomic (a Durable Object runs one event at a time).
 *
 * Generations: the object deletes its storage once a lease has been over for a while (the alarm
 * below), so a counter kept in storage would start again from 1 and a new holder could get a
 * generation an old handle still carries. A generation is therefore drawn from the clock,
 * `max(previous + 1, now * 1000)`: it grows within the object's life, and after a deletion it
 * still exceeds every earlier one, since the deletion comes KEEP_MS after the last lease ended
 * (well past any clock step between the machines an object may move across). It stays an exact
 * integer (below 2^53) until the year 2255.
 */

export interface LeaseState {
  /** Null once the lease ended (released, or expired and cleared by the alarm). */
  readonly holder: string | null;
  readonly generation: number;
  /** When the lease lapses (or lapsed), in ms since the epoch of the object's clock. */
  readonly expiresAt: number;
}

/** How long an ended lease is remembered (markLostRuns reads when it lapsed) before the object deletes its storage. */
export const KEEP_MS = 10 * 60_000;

export function holds(s: LeaseState | null, now: number): boolean {
  return s !== null && s.holder !== null && s.expiresAt > now;
}

export function holdsAs(s: LeaseState | null, generation: number, now: number): s is LeaseState {
  return s !== null && holds(s, now) && s.generation === generation;
}

/** The state after `holder` takes the thread, or null while another lease holds it. */
export function acquired(s: LeaseState | null, holder: string, ttlMs: number, now: number): LeaseState | null {
  if (holds(s, now)) return null;
  return { holder, generation: Math.max((s?.generation ?? 0) + 1, now * 1000), expiresAt: now + ttlMs };
}

/** The state after a renewal, or null once this generation no longer holds the thread. */
export function renewed(s: LeaseState | null, generation: number, ttlMs: number, now: number): LeaseState | null {
  return holdsAs(s, generation, now) ? { ...s, expiresAt: now + ttlMs } : null;
}

/** The state after this generation lets go, or null when it is not the current lease (nothing to do). */
export function released(s: LeaseState | null, generation: number, now: number): LeaseState | null {
  if (s === null || s.holder === null || s.generation !== generation) return null;
  return { holder: null, generation, expiresAt: Math.min(now, s.expiresAt) };
}

/** How long the thread has been without a lease: null while held; a lease never taken (or forgotten) lapsed long ago. */
export function lapsedMs(s: LeaseState | null, now: number): number | null {
  if (s === null) return Number.MAX_SAFE_INTEGER;
  if (holds(s, now)) return null;
  return Math.max(0, now - s.expiresAt);
}

/**
 * The alarm: an expired holder is cleared (expiry is already enforced by time; the alarm makes it
 * visible in storage and starts the countdown to deletion), an ended lease is forgotten KEEP_MS
 * later. `state` null means delete everything; `alarmAt` is the next alarm, if any.
 */
export function onAlarm(s: LeaseState | null, now: number): { state: LeaseState | null; alarmAt: number | null } {
  if (s === null) return { state: null, alarmAt: null };
  if (holds(s, now)) return { state: s, alarmAt: s.expiresAt };
  const forgetAt = s.expiresAt + KEEP_MS;
  if (now >= forgetAt) return { state: null, alarmAt: null };
  return { state: s.holder === null ? s : { ...s, holder: null }, alarmAt: forgetAt };
}
