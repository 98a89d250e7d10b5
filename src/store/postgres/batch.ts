/**
 * Natural batching of one kind of write: a call made while `inFlight` batches of its kind are
 * already at the database waits, and the calls that waited go together in one statement when a
 * slot frees. With a slot free a call goes at once, so a quiet service adds no delay; under load,
 * fewer statements carry the same rows (less work per row on both ends of the connection).
 *
 * Calls with the same key never share a batch (one statement cannot touch a row twice); a batch
 * goes in key order. A batch that fails for a reason other than the connection is retried one
 * call at a time, so a bad row fails only its own call.
 */
import { isConnectionError } from "./health.js";

export interface BatchOptions<I, O> {
  /** Writes the items in one statement; answers one result per item, in order. */
  readonly many: (items: readonly I[]) => Promise<O[]>;
  /** Writes one item alone (the fallback after a failed batch). */
  readonly one: (item: I) => Promise<O>;
  readonly key: (item: I) => string;
  /** Batches of this kind at the database at once. */
  readonly inFlight: number;
  /** Items in one batch at most. */
  readonly max: number;
  /**
   * A call that waited this long for a slot is refused rather than sent: its caller has given up
   * (the guard answers 503 first), and a write it no longer waits for must not land later.
   */
  readonly maxWaitMs: number;
  /** Every batch sent, with its items (DEBUG logs). */
  readonly onBatch?: (items: readonly I[]) => void;
  /** A batch failed and its items go one at a time (a WARNING: it should not happen). */
  readonly onFallback?: (size: number, error: unknown) => void;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface Waiting<I, O> {
  readonly item: I;
  readonly since: number;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}

export function batcher<I, O>(options: BatchOptions<I, O>): (item: I) => Promise<O> {
  let queue: Waiting<I, O>[] = [];
  let busy = 0;

  /** The next batch: distinct keys, oldest first; calls whose caller has given up are dropped. */
  const take = (): Waiting<I, O>[] => {
    const now = performance.now();
    const batch: Waiting<I, O>[] = [];
    const rest: Waiting<I, O>[] = [];
    const keys = new Set<string>();
    for (const w of queue) {
      if (now - w.since >= options.maxWaitMs) {
        w.reject(Object.assign(new Error("the database did not take the write in time"), { code: "QUERY_TIMEOUT" }));
        continue;
      }
      const key = options.key(w.item);
      if (batch.length >= options.max || keys.has(key)) rest.push(w);
      else {
        keys.add(key);
        batch.push(w);
      }
    }
    queue = rest;
    // Rows in key order: batches that touch the same rows lock them in one order (fewer deadlocks;
    // one that happens anyway fails the statement, and its calls go one at a time).
    return batch.sort((a, b) => compare(options.key(a.item), options.key(b.item)));
  };

  const send = async (batch: Waiting<I, O>[]): Promise<void> => {
    try {
      options.onBatch?.(batch.map((w) => w.item));
      const results = batch.length === 1 ? [await options.one(batch[0]!.item)] : await options.many(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]!));
    } catch (error) {
      if (batch.length === 1 || isConnectionError(error)) {
        for (const w of batch) w.reject(error);
      } else {
        options.onFallback?.(batch.length, error);
        await Promise.all(batch.map((w) => options.one(w.item).then(w.resolve, w.reject)));
      }
    }
  };

  const pump = (): void => {
    while (busy < options.inFlight && queue.length > 0) {
      const batch = take();
      if (batch.length === 0) continue;
      busy++;
      void send(batch).finally(() => {
        busy--;
        pump();
      });
    }
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, since: performance.now(), resolve, reject });
      pump();
    });
}
