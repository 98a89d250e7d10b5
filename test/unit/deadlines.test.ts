import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDeadlines, Deadline } from "../../src/policy/deadlines.js";

/** A deadline that notes when it expired (fake time, ms). */
class Noted extends Deadline {
  expiredAt: number | undefined;
  constructor(readonly name: string, private readonly log: string[]) {
    super();
  }
  expire(): void {
    this.expiredAt = performance.now();
    this.log.push(this.name);
  }
}

describe("call deadlines", () => {
  let log: string[];
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    log = [];
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe.each([
    ["one shared timer", true],
    ["a timer a call", false],
  ])("%s", (_, shared) => {
    it("expires each call at its own deadline, an earlier one started later first, never early", () => {
      const deadlines = createDeadlines(shared);
      const t0 = performance.now();
      const slow = new Noted("slow", log);
      const quick = new Noted("quick", log);
      deadlines.start(slow, 300);
      vi.advanceTimersByTime(50);
      deadlines.start(quick, 100);
      vi.advanceTimersByTime(99);
      expect(log).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(log).toEqual(["quick"]);
      expect(quick.expiredAt! - t0).toBe(150);
      vi.advanceTimersByTime(149);
      expect(log).toEqual(["quick"]);
      vi.advanceTimersByTime(1);
      expect(log).toEqual(["quick", "slow"]);
      expect(slow.expiredAt! - t0).toBe(300);
      // Nothing is left to wait for: no timer stays armed.
      expect(vi.getTimerCount()).toBe(0);
    });

    it("a deadline beyond the longest timer (2^31 - 1 ms) waits it out instead of firing at once", () => {
      const deadlines = createDeadlines(shared);
      const t0 = performance.now();
      const far = new Noted("far", log);
      deadlines.start(far, 3_000_000_000);
      vi.advanceTimersByTime(1000);
      expect(log).toEqual([]);
      vi.advanceTimersByTime(2 ** 31);
      expect(log).toEqual([]);
      vi.advanceTimersByTime(3_000_000_000);
      expect(log).toEqual(["far"]);
      expect(far.expiredAt! - t0).toBe(3_000_000_000);
    });

    it("a call that ended never expires, and close() leaves nothing to expire", () => {
      const deadlines = createDeadlines(shared);
      const ended = new Noted("ended", log);
      const open = new Noted("open", log);
      deadlines.start(ended, 100);
      deadlines.start(open, 200);
      deadlines.end(ended);
      vi.advanceTimersByTime(150);
      expect(log).toEqual([]);
      deadlines.close();
      if (shared) expect(vi.getTimerCount()).toBe(0);
      else deadlines.end(open); // a timer a call: each call ends its own
      vi.advanceTimersByTime(1000);
      expect(log).toEqual([]);
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  it("shared: calls one after another arm no timer of their own; the one timer looks once a period", () => {
    const deadlines = createDeadlines(true);
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    for (let i = 0; i < 100; i++) {
      const call = new Noted(`call ${i}`, log);
      deadlines.start(call, 5000);
      vi.advanceTimersByTime(1);
      deadlines.end(call);
    }
    // Armed once, for the first call's deadline; no call armed or cleared one since.
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(1);
    const last = new Noted("last", log);
    deadlines.start(last, 5000);
    // The first deadline passes with nothing due: the timer arms itself for the call left.
    vi.advanceTimersByTime(4900);
    expect(log).toEqual([]);
    expect(setTimeoutSpy).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(200);
    expect(log).toEqual(["last"]);
    expect(vi.getTimerCount()).toBe(0);
    setTimeoutSpy.mockRestore();
  });

  it("a timer a call: each call arms its own and ending it clears it", () => {
    const deadlines = createDeadlines(false);
    const a = new Noted("a", log);
    const b = new Noted("b", log);
    deadlines.start(a, 100);
    deadlines.start(b, 100);
    expect(vi.getTimerCount()).toBe(2);
    deadlines.end(a);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(100);
    expect(log).toEqual(["b"]);
  });
});
