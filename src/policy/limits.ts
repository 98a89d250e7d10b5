/**
 * Per-API limits (spec 8), per process: `rate_per_minute` is a token bucket; `max_calls_per_run`
 * counts calls of one run. Both are taken last, just before sending.
 */
import type { Clock } from "../clock.js";

export class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {
    this.tokens = perMinute;
    this.last = clock.now();
  }
  /** Takes one token if there is one. */
  take(): boolean {
    const now = this.clock.now();
    this.tokens = Math.min(this.perMinute, this.tokens + ((now - this.last) * this.perMinute) / 60_000);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
