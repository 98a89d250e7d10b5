/**
 * The thread lease Durable Object (binding THREAD_LEASES, class ThreadLeaseObject), one per
 * thread id: acquire, renew, release and isHeld on the state of src/store/durable/lease-state.ts,
 * each step one event of the object (atomic: the object runs one event at a time, and awaiting
 * its own storage lets no other event in). Expiry holds by time (every step compares with the
 * clock), and an alarm at the expiry clears a holder that never came back, then forgets the
 * thread's lease altogether KEEP_MS later, so a thread leaves no storage behind.
 *
 * The claim of a thread, writes fenced on a lease and a run's end come here too: the lease is
 * checked (or taken) and the write sent to the store object inside blockConcurrencyWhile, so no
 * acquire, renewal or alarm reaches this lease until the write is in (src/store/durable/objects.ts).
 */
import { DurableObject, type DurableObjectState } from "cloudflare:workers";
import type { RunStart, ThreadRow } from "../../store/ports.js";
import { acquired, holds, holdsAs, KEEP_MS, lapsedMs, type LeaseState, onAlarm, released, renewed } from "../../store/durable/lease-state.js";
import type { ClaimAnswer, FencedWrite, LeaseObjectApi } from "../../store/durable/objects.js";
import { type DurableBindings, durableObjects } from "./bindings.js";

const KEY = "lease";

export class ThreadLeaseObject extends DurableObject<DurableBindings> implements LeaseObjectApi {
  #state: LeaseState | null = null;

  constructor(ctx: DurableObjectState, env: DurableBindings) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.#state = (await ctx.storage.get<LeaseState>(KEY)) ?? null;
    });
  }

  async acquire(holder: string, ttlMs: number): Promise<number | null> {
    const next = acquired(this.#state, holder, ttlMs, Date.now());
    if (!next) return null;
    await this.#save(next, next.expiresAt);
    return next.generation;
  }

  async renew(generation: number, ttlMs: number): Promise<boolean> {
    const next = renewed(this.#state, generation, ttlMs, Date.now());
    if (!next) return false;
    await this.#save(next, next.expiresAt);
    return true;
  }

  async release(generation: number): Promise<void> {
    await this.#release(generation);
  }

  async isHeld(): Promise<boolean> {
    return holds(this.#state, Date.now());
  }

  async lapsedMs(): Promise<number | null> {
    return lapsedMs(this.#state, Date.now());
  }

  claim(holder: string, ttlMs: number, row: ThreadRow, start: RunStart | null): Promise<ClaimAnswer> {
    return this.#exclusive(async () => {
      const next = acquired(this.#state, holder, ttlMs, Date.now());
      const answer = await durableObjects(this.env).store().claim(row, next ? start : null);
      if (next) await this.#save(next, next.expiresAt);
      return { ...answer, generation: next?.generation ?? null };
    });
  }

  fenced(generation: number, write: FencedWrite, release: boolean): Promise<boolean> {
    return this.#exclusive(async () => {
      if (!holdsAs(this.#state, generation, Date.now())) return false;
      await durableObjects(this.env).store().write(write);
      if (release) await this.#release(generation);
      return true;
    });
  }

  async alarm(): Promise<void> {
    const { state, alarmAt } = onAlarm(this.#state, Date.now());
    if (state === null) {
      this.#state = null;
      await this.ctx.storage.deleteAll();
      return;
    }
    if (state !== this.#state) await this.#save(state, alarmAt);
    else if (alarmAt !== null) await this.ctx.storage.setAlarm(alarmAt);
  }

  async #release(generation: number): Promise<void> {
    const next = released(this.#state, generation, Date.now());
    if (next) await this.#save(next, next.expiresAt + KEEP_MS);
  }

  async #save(next: LeaseState, alarmAt: number | null): Promise<void> {
    this.#state = next;
    await this.ctx.storage.put(KEY, next);
    if (alarmAt !== null) await this.ctx.storage.setAlarm(alarmAt);
  }

  /**
   * `work` with no other event let in until it ends. A callback of blockConcurrencyWhile that
   * throws resets the object, so its failure comes back as a value and is thrown from here.
   */
  async #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const outcome = await this.ctx.blockConcurrencyWhile(async () => {
      try {
        return { ok: true as const, value: await work() };
      } catch (error) {
        return { ok: false as const, error };
      }
    });
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }
}
