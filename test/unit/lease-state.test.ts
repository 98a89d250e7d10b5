/** The thread lease object's steps (src/store/durable/lease-state.ts), on a clock the test sets. */
import { describe, expect, it } from "vitest";
import { acquired, holds, KEEP_MS, lapsedMs, type LeaseState, onAlarm, released, renewed } from "../../src/store/durable/lease-state.js";

const T = Date.UTC(2026, 0, 1);

describe("lease state", () => {
  it("takes a free thread, refuses it while held, and takes it again once expired", () => {
    const a = acquired(null, "a", 1000, T)!;
    expect(a).toEqual({ holder: "a", generation: T * 1000, expiresAt: T + 1000 });
    expect(acquired(a, "b", 1000, T + 999)).toBeNull();
    const b = acquired(a, "b", 1000, T + 1000)!;
    expect(b.holder).toBe("b");
    expect(b.generation).toBeGreaterThan(a.generation);
  });

  it("grows the generation by one within a millisecond, and from the clock after the state was forgotten", () => {
    const a = acquired(null, "a", 1000, T)!;
    const b = acquired(released(a, a.generation, T)!, "b", 1000, T)!;
    expect(b.generation).toBe(a.generation + 1);
    // Forgotten (deleted by the alarm) KEEP_MS after the end: the next generation still exceeds b's.
    const after = acquired(null, "c", 1000, T + KEEP_MS)!;
    expect(after.generation).toBeGreaterThan(b.generation);
    expect(Number.isSafeInteger(after.generation)).toBe(true);
  });

  it("renews only the current, unexpired generation, from now", () => {
    const a = acquired(null, "a", 1000, T)!;
    expect(renewed(a, a.generation, 1000, T + 900)).toEqual({ ...a, expiresAt: T + 1900 });
    expect(renewed(a, a.generation + 1, 1000, T + 900)).toBeNull();
    expect(renewed(a, a.generation, 1000, T + 1000)).toBeNull();
  });

  it("releases only the current generation, which then lapsed at the release", () => {
    const a = acquired(null, "a", 1000, T)!;
    expect(released(a, a.generation + 1, T + 10)).toBeNull();
    const r = released(a, a.generation, T + 10)!;
    expect(r).toEqual({ holder: null, generation: a.generation, expiresAt: T + 10 });
    expect(holds(r, T + 10)).toBe(false);
    expect(released(r, a.generation, T + 20)).toBeNull();
    expect(lapsedMs(r, T + 510)).toBe(500);
  });

  it("tells how long the thread has been without a lease", () => {
    const a = acquired(null, "a", 1000, T)!;
    expect(lapsedMs(a, T + 999)).toBeNull();
    expect(lapsedMs(a, T + 3000)).toBe(2000);
    expect(lapsedMs(null, T)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("the alarm clears an expired holder, then forgets the lease KEEP_MS after it ended", () => {
    const a = acquired(null, "a", 1000, T)!;
    // Renewed since the alarm was set: the alarm moves to the new expiry.
    expect(onAlarm(a, T + 500)).toEqual({ state: a, alarmAt: T + 1000 });
    const cleared = onAlarm(a, T + 1000);
    expect(cleared).toEqual({ state: { ...a, holder: null }, alarmAt: T + 1000 + KEEP_MS });
    const ended = cleared.state as LeaseState;
    expect(onAlarm(ended, T + 2000)).toEqual({ state: ended, alarmAt: T + 1000 + KEEP_MS });
    expect(onAlarm(ended, T + 1000 + KEEP_MS)).toEqual({ state: null, alarmAt: null });
    expect(onAlarm(null, T)).toEqual({ state: null, alarmAt: null });
  });
});
