/** The clock port: wall time for records, expiries and leases. Tests pass a clock they advance. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

let lastMs = Number.NaN;
let lastIso = "";

/** ISO 8601 UTC with an explicit +00:00 offset (spec 2.2); a run asks for the same millisecond several times. */
export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastIso = `${isoUtcBody(ms)}+00:00`;
    // Reading a character makes V8 lay the joined string out in one piece: records keep these
    // for a run's life, and the pieces (a slice holding the whole ISO string) would stay with it.
    lastIso.charCodeAt(0);
    lastMs = ms;
  }
  return lastIso;
}

let minuteAt = Number.NaN;
/** `YYYY-MM-DDTHH:MM:` of the minute `minuteAt`, or "" when its year needs the extended form. */
let minutePrefix = "";

/**
 * `toISOString()` of `ms` without its `Z`: `YYYY-MM-DDTHH:MM:SS.mmm`. The minute's part is made
 * once a minute and the rest by hand: `toISOString` costs about a microsecond, and a busy
 * process stamps a new millisecond several times a chat.
 */
export function isoUtcBody(time: number): string {
  // As Date does: a fraction of a millisecond is dropped, toward zero.
  const ms = Math.trunc(time);
  const minute = Math.floor(ms / 60_000);
  if (minute !== minuteAt) {
    const iso = new Date(minute * 60_000).toISOString();
    minutePrefix = iso.length === 24 ? iso.slice(0, 17) : "";
    minuteAt = minute;
  }
  // Years before 0 or after 9999 (and an invalid time, which throws) take the general way.
  if (minutePrefix === "") return new Date(ms).toISOString().slice(0, -1);
  const rest = ms - minute * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  return `${minutePrefix}${seconds < 10 ? "0" : ""}${seconds}.${millis < 100 ? (millis < 10 ? "00" : "0") : ""}${millis}`;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    new Sleep(ms, signal, resolve, reject);
  });
}

/**
 * One sleep: its own abort listener (handleEvent) and its timer's argument, so a waiting run's
 * sleep keeps no closures of its own.
 */
class Sleep {
  private readonly timer: ReturnType<typeof setTimeout>;
  constructor(
    ms: number,
    private readonly signal: AbortSignal,
    private readonly resolve: () => void,
    private readonly reject: (reason: unknown) => void,
  ) {
    this.timer = setTimeout(wake, ms, this);
    signal.addEventListener("abort", this, { once: true });
  }

  /** The signal aborted. */
  handleEvent(): void {
    clearTimeout(this.timer);
    this.reject(this.signal.reason);
  }

  wake(): void {
    this.signal.removeEventListener("abort", this);
    this.resolve();
  }
}

function wake(sleep: Sleep): void {
  sleep.wake();
}
