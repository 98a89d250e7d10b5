/**
 * The first few of many records in an order, without sorting them all: what a page of threads or
 * tasks and the retention sweep read from the memory store. A heap of at most `count` members,
 * its root the last of those kept so far, takes each record that comes before that root: one
 * pass over the records and about log2(count) comparisons for each record kept, instead of
 * copying every record into an array and sorting it (scripts/bench-store.mjs).
 */

/**
 * The first `count` of `records` that `keep` accepts, in `order` (a total order: ties broken by
 * an id, as the SQL adapters break them).
 */
export function firstInOrder<T>(records: Iterable<T>, count: number, order: (a: T, b: T) => number, keep: (record: T) => boolean = () => true): T[] {
  const heap: T[] = [];
  if (count <= 0) return heap;
  for (const record of records) if (keep(record)) offer(heap, count, record, order);
  return heap.sort(order);
}

/**
 * The same, for records that come roughly in the reverse of `order` (the store's maps keep them
 * as they were made, and the newest made are mostly the last written): read from the end, the
 * first ones read fill the heap and most of the rest are turned away by one comparison, where
 * read from the start each record would displace the root.
 */
export function firstInOrderFromEnd<T>(records: readonly T[], count: number, order: (a: T, b: T) => number, keep: (record: T) => boolean = () => true): T[] {
  const heap: T[] = [];
  if (count <= 0) return heap;
  for (let i = records.length - 1; i >= 0; i--) if (keep(records[i]!)) offer(heap, count, records[i]!, order);
  return heap.sort(order);
}

function offer<T>(heap: T[], count: number, record: T, order: (a: T, b: T) => number): void {
  if (heap.length < count) {
    heap.push(record);
    siftUp(heap, heap.length - 1, order);
  } else if (order(record, heap[0]!) < 0) {
    heap[0] = record;
    siftDown(heap, 0, order);
  }
}

/** A heap whose root comes last in `order`: each member comes after neither of its children. */
function siftUp<T>(heap: T[], at: number, order: (a: T, b: T) => number): void {
  const item = heap[at]!;
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if (order(heap[parent]!, item) >= 0) break;
    heap[at] = heap[parent]!;
    at = parent;
  }
  heap[at] = item;
}

function siftDown<T>(heap: T[], at: number, order: (a: T, b: T) => number): void {
  const item = heap[at]!;
  const n = heap.length;
  for (;;) {
    let child = 2 * at + 1;
    if (child >= n) break;
    if (child + 1 < n && order(heap[child + 1]!, heap[child]!) > 0) child++;
    if (order(heap[child]!, item) <= 0) break;
    heap[at] = heap[child]!;
    at = child;
  }
  heap[at] = item;
}
