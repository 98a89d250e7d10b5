import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDeadlines, Deadline, keepIn, takeOut } from "../../src/policy/deadlines.js";

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

  it("shared: calls ended out of order, several due at once and one started again all expire once, at their own deadlines", () => {
    const deadlines = createDeadlines(true);
    const calls = Array.from({ length: 6 }, (_, i) => new Noted(`call ${i}`, log));
    // call i is due at 100 ms, except 4 and 5 at 300 ms.
    calls.forEach((call, i) => deadlines.start(call, i < 4 ? 100 : 300));
    deadlines.end(calls[1]!);
    deadlines.end(calls[0]!);
    deadlines.end(calls[0]!); // a second end changes nothing
    deadlines.end(calls[4]!);
    deadlines.start(calls[1]!, 200);
    vi.advanceTimersByTime(100);
    expect(log.sort()).toEqual(["call 2", "call 3"]);
    vi.advanceTimersByTime(100);
    expect(log.sort()).toEqual(["call 1", "call 2", "call 3"]);
    vi.advanceTimersByTime(100);
    expect(log.sort()).toEqual(["call 1", "call 2", "call 3", "call 5"]);
    for (const call of calls) deadlines.end(call);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("shared: a call that ends after close() leaves the next calls' deadlines as they are", () => {
    const deadlines = createDeadlines(true);
    const before = [new Noted("before 0", log), new Noted("before 1", log)];
    for (const call of before) deadlines.start(call, 100);
    deadlines.close();
    const after = [new Noted("after 0", log), new Noted("after 1", log)];
    for (const call of after) deadlines.start(call, 100);
    for (const call of before) deadlines.end(call);
    vi.advanceTimersByTime(100);
    expect(log.sort()).toEqual(["after 0", "after 1"]);
  });

  it("keepIn/takeOut: each member keeps its place in its own field; taking one out moves the last into it", () => {
    type Member = { name: string; slot: number; runSlot: number };
    const member = (name: string): Member => ({ name, slot: -1, runSlot: -1 });
    const [a, b, c, d] = ["a", "b", "c", "d"].map(member) as [Member, Member, Member, Member];
    const list: Member[] = [];
    const other: Member[] = [];
    for (const m of [a, b, c, d]) keepIn(list, m, "slot");
    keepIn(other, c, "runSlot");
    takeOut(list, b, "slot");
    expect(list.map((m) => m.name)).toEqual(["a", "d", "c"]);
    expect(list.every((m, i) => m.slot === i)).toBe(true);
    expect(b.slot).toBe(-1);
    takeOut(list, b, "slot"); // not in it: nothing happens
    takeOut(list, c, "runSlot"); // c is not at its runSlot in this list: nothing happens
    expect(list.map((m) => m.name)).toEqual(["a", "d", "c"]);
    takeOut(list, c, "slot");
    takeOut(list, a, "slot");
    expect(list.map((m) => m.name)).toEqual(["d"]);
    expect(d.slot).toBe(0);
    expect(other).toEqual([c]);
    expect(c.runSlot).toBe(0);
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
