import { describe, expect, it } from "vitest";
import { isoTime, isoUtcBody } from "../../src/clock.js";

/** What the stamps must equal: the runtime's own `toISOString`, without its `Z`. */
const reference = (ms: number) => new Date(ms).toISOString().slice(0, -1);

describe("ISO stamps", () => {
  it("equal toISOString at every millisecond of a minute's edges, across days, years and the epoch", () => {
    const edges = [
      0,
      -1,
      -60_000,
      -60_001,
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      Date.UTC(2026, 10, 29, 6, 59, 59, 999),
      Date.UTC(2026, 10, 29, 7, 0, 0, 0),
      Date.UTC(2028, 1, 29, 12, 0, 0, 5),
      Date.UTC(1999, 11, 31, 23, 59, 59, 990),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(0, 0, 1) - 2 * 365 * 86_400_000, // before year 0: the extended form
      -62_167_219_200_000, // 0000-01-01T00:00:00.000
      8.64e15, // the last valid time (+275760)
      -8.64e15,
    ];
    for (const at of edges)
      for (let d = -3; d <= 3; d++) if (Math.abs(at + d) <= 8.64e15) expect(isoUtcBody(at + d), `${at + d}`).toBe(reference(at + d));
  });

  it("equal toISOString over many times, in and out of order (its minute cache never leaks into another minute)", () => {
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const start = Date.UTC(2026, 0, 1);
    let at = start;
    for (let i = 0; i < 20_000; i++) {
      // Mostly close steps (the minute's part reused), now and then a jump anywhere in 1900-2100.
      at = next() < 0.9 ? at + Math.floor(next() * 5_000) : Date.UTC(1900, 0, 1) + Math.floor(next() * 200 * 365.25 * 86_400_000);
      expect(isoUtcBody(at)).toBe(reference(at));
    }
  });

  it("drop a fraction of a millisecond as Date does, toward zero", () => {
    for (const at of [1.5, 999.999, -0.5, -1.5, -60_000.25, Date.UTC(2026, 10, 29, 7, 30) + 0.75]) expect(isoUtcBody(at), `${at}`).toBe(reference(at));
  });

  it("isoTime: the same text with +00:00; an invalid time throws as toISOString does", () => {
    const at = Date.UTC(2026, 10, 29, 7, 14, 52, 81);
    expect(isoTime(at)).toBe("2026-11-29T07:14:52.081+00:00");
    expect(isoTime(at + 1)).toBe("2026-11-29T07:14:52.082+00:00");
    expect(() => isoUtcBody(Number.NaN)).toThrow(RangeError);
  });
});
