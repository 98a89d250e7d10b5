/** The clock port: wall time for records, expiries and leases. Tests pass a clock they advance. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoTime(ms: number): string {
  // ISO 8601 UTC with an explicit +00:00 offset (spec 2.2).
  return new Date(ms).toISOString().replace("Z", "+00:00");
}
