/** The thread lease port: one run per thread, its writes fenced on the lease's generation. */

export interface LeaseHandle {
  readonly threadId: string;
  readonly holder: string;
  /** Grows each time the thread is leased; writes may be fenced on it. */
  readonly generation: number;
}

/** One run per thread. */
export interface ThreadLease {
  /**
   * Takes the thread for `ttlMs` unless another holder has an unexpired lease. Atomic: under
   * concurrent calls for one thread exactly one caller gets a handle, the others null.
   */
  acquire(threadId: string, holder: string, ttlMs: number): Promise<LeaseHandle | null>;
  /**
   * Extends a lease still held by this handle; false once it was lost (expired and taken). A lease
   * kept in this process may answer at once, without a promise: every waiting run renews every
   * few seconds, and ten thousand of them would otherwise make a promise and its handlers each time.
   */
  renew(handle: LeaseHandle, ttlMs: number): Promise<boolean> | boolean;
  /** Frees the thread if this handle still holds it. */
  release(handle: LeaseHandle): Promise<void>;
  /** True while an unexpired lease is held on the thread. */
  isHeld(threadId: string): Promise<boolean>;
}

/** Who takes a thread's lease in claimThread, for how long, and through which lease port. */
export interface LeaseClaim {
  readonly port: ThreadLease;
  readonly holder: string;
  readonly ttlMs: number;
}
