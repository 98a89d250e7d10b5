/**
 * What the two Durable Objects answer over RPC, as the adapters (./adapter.ts) call them: the
 * store object (one, holding every table: ./tables.ts) and a lease object per thread
 * (./lease-state.ts). The classes themselves live with the workerd entry
 * (src/runtime/workerd/objects.ts); these types keep the adapters free of workerd.
 *
 * Fencing across the two: a write fenced on a lease, the claim of a thread and the end of a run
 * go to the thread's lease object, which checks its lease and sends the write on to the store
 * object inside `blockConcurrencyWhile`, so no other event (an acquire, a renewal, the alarm)
 * reaches that lease until the write is in. A write is therefore made while its lease holds,
 * exactly as PostgreSQL's one statement makes it, without the store object ever calling a
 * lease object (no call cycle between them).
 */
import type { Message, RunStart, ThreadRow } from "../ports.js";
import type { FencedWrite, SqliteTables } from "./tables.js";

type Remote<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never };

/** The store object: every table method, answered from its SQLite. */
export type StoreObjectApi = Remote<Omit<SqliteTables, "pendingOn" | "dueOnThread">> & {
  ping(): Promise<void>;
};

export interface ClaimAnswer {
  readonly created: boolean;
  readonly row: ThreadRow;
  readonly started: boolean;
  /** The generation of the lease taken, or null when another holder has the thread. */
  readonly generation: number | null;
}

/** One thread's lease object. */
export interface LeaseObjectApi {
  /** The generation taken, or null while another lease holds the thread. */
  acquire(holder: string, ttlMs: number): Promise<number | null>;
  renew(generation: number, ttlMs: number): Promise<boolean>;
  release(generation: number): Promise<void>;
  isHeld(): Promise<boolean>;
  /** How long the thread has been without a lease (null while held). */
  lapsedMs(): Promise<number | null>;
  /** Takes the lease unless held, then createThread and, when both happened, the run's start. */
  claim(holder: string, ttlMs: number, row: ThreadRow, start: RunStart | null): Promise<ClaimAnswer>;
  /** Sends `write` to the store while `generation` holds the thread (then lets go with `release`); false, writing nothing, once it does not. */
  fenced(generation: number, write: FencedWrite, release: boolean): Promise<boolean>;
}

/** Where the adapters find the objects: the store object, and the lease object of a thread. */
export interface DurableObjects {
  store(): StoreObjectApi;
  lease(threadId: string): LeaseObjectApi;
}

export type { FencedWrite, Message };
