/**
 * The read deadlines of a policy client's calls in flight (CONTRACT 5: one deadline for a call's
 * whole answer). Two ways to keep them:
 *
 * - shared (where timers outlive a request: Node, Bun, Deno): one timer armed for the earliest
 *   deadline. A call that ends leaves it as it is; once due, it fails the calls past their
 *   deadline and arms itself for the next one, or stops when none is left. On Node, arming and
 *   clearing a timer for each call cost about 10 µs a call on a loopback upstream, a quarter of
 *   what the client added to a bare fetch.
 * - one timer a call (a worker runtime, where a timer belongs to the request that set it and a
 *   shared one could fire in a request that has ended).
 */

/**
 * The longest delay a timer takes (2^31 - 1 ms, about 24.8 days): a longer one fires at once on
 * Node and workerd. A deadline further off is waited for in steps of at most this.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One call's deadline: `expire()` runs once it passed, unless the call ended first. */
export abstract class Deadline {
  /** `performance.now()` when the call's deadline passes. */
  at = 0;
  /** The call's own timer (one timer a call only). */
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** Its place in the shared deadlines' list, -1 when not in it (shared only). */
  slot = -1;
  abstract expire(): void;
}

export interface Deadlines {
  /**
   * `deadline.expire()` runs once `ms` have passed since `now` (`performance.now()`, the
   * caller's own reading when it has one), unless `end(deadline)` comes first.
   */
  start(deadline: Deadline, ms: number, now?: number): void;
  end(deadline: Deadline): void;
  /** Clears the timer (the app is closing): no deadline expires after this. */
  close(): void;
}

export function createDeadlines(shared: boolean): Deadlines {
  return shared ? new SharedDeadlines() : ownTimers;
}

const ownTimers: Deadlines = {
  start(deadline, ms, now = performance.now()) {
    deadline.at = now + ms;
    deadline.timer = setTimeout(expire, Math.min(ms, MAX_TIMER_MS), deadline);
  },
  end(deadline) {
    clearTimeout(deadline.timer);
  },
  close() {},
};

function expire(deadline: Deadline): void {
  const left = deadline.at - performance.now();
  // A deadline beyond the longest timer (or a timer due a fraction early) waits on.
  if (left >= 1) deadline.timer = setTimeout(expire, Math.min(Math.ceil(left), MAX_TIMER_MS), deadline);
  else deadline.expire();
}

/**
 * A list of calls in flight whose members keep their place in it in a field of their own
 * (`slot` here, `runSlot` for a run's calls): adding one and taking one out take constant time
 * and allocate nothing. Two Sets, this list's and the run's, whose small tables V8 reallocates as
 * they empty, cost 0.2-0.5 µs of the 6 µs the policy client adds to a call on Node 20
 * (scripts/BENCHMARKS.md).
 */
export function keepIn<K extends string, T extends Record<K, number>>(list: T[], item: T, key: K): void {
  (item as Record<K, number>)[key] = list.push(item) - 1;
}

/** Takes `item` out of `list` (kept there by `keepIn` with the same `key`), if it is in it: the last member takes its place. */
export function takeOut<K extends string, T extends Record<K, number>>(list: T[], item: T, key: K): void {
  const at = item[key];
  if (at < 0 || list[at] !== item) return;
  const last = list.pop()!;
  if (last !== item) {
    list[at] = last;
    (last as Record<K, number>)[key] = at;
  }
  (item as Record<K, number>)[key] = -1;
}

class SharedDeadlines implements Deadlines {
  private readonly pending: Deadline[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fires (Infinity: not armed). */
  private armedAt = Infinity;

  start(deadline: Deadline, ms: number, now: number = performance.now()): void {
    deadline.at = now + ms;
    keepIn(this.pending, deadline, "slot");
    if (deadline.at < this.armedAt) this.arm(deadline.at);
  }

  end(deadline: Deadline): void {
    takeOut(this.pending, deadline, "slot");
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Infinity;
    for (const deadline of this.pending) deadline.slot = -1;
    this.pending.length = 0;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedAt = at;
    // Whole milliseconds, never early: a timer due a fraction early looks again 1 ms later.
    this.timer = setTimeout(fire, Math.min(Math.max(1, Math.ceil(at - performance.now())), MAX_TIMER_MS), this);
  }

  due(): void {
    this.timer = undefined;
    this.armedAt = Infinity;
    const now = performance.now();
    const { pending } = this;
    const passed: Deadline[] = [];
    let next = Infinity;
    for (let i = 0; i < pending.length; ) {
      const deadline = pending[i]!;
      if (deadline.at <= now) {
        // Taken out first (the last one moves here, and is looked at next), expired once all are out.
        this.end(deadline);
        passed.push(deadline);
      } else {
        if (deadline.at < next) next = deadline.at;
        i++;
      }
    }
    for (const deadline of passed) deadline.expire();
    if (next !== Infinity && next < this.armedAt) this.arm(next);
  }
}

function fire(deadlines: SharedDeadlines): void {
  deadlines.due();
}
