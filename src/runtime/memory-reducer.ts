/// <reference types="node" />
/**
 * Lets V8's memory reducer run on Node 24. The reducer is what gives an idle process's memory
 * back after a burst (the pages a burst of requests left behind, a young generation grown to its
 * cap): every 8 s it asks whether the process allocates little, and then runs a full collection
 * that shrinks the heap. Since V8 13.1 (Node 24) the question also weighs the allocation rate on
 * the C++ heap (cppgc), whose rate is exactly 0 in a process that has never allocated there, and
 * V8 reads 0 as "allocating at full speed": the answer is "high alloc" on every look, and the
 * reducer never runs (only a watchdog, 100 s after the last full collection, which any later
 * ordinary full collection pushes back). Node allocates on that heap for `node:vm` scripts and
 * contexts only. So one tiny script is compiled now and then (never run): its few bytes on the
 * C++ heap make that rate small but not zero, which is what V8 reads as idle. The rate decays to
 * exactly 0 again about 100 s after the last allocation, hence the period.
 *
 * On Node 20 the reducer runs without it (our benchmarks see it collect), and V8 12 (Node 22) is
 * reported to floor that rate above 0; there the nudges change nothing. Measured with
 * `--trace-memory-reducer --trace-mutator-utilization`: without them Node 24.22 printed
 * "Embedder mutator utilization = 0.000 ... high alloc" at every look; see scripts/BENCHMARKS.md.
 */
import { Script } from "node:vm";

/** How often a script is compiled: well inside the ~100 s after which the rate is 0 again. */
export const REDUCER_NUDGE_MS = 20_000;

/** Starts the nudges (an unref'd interval: it keeps no process alive); returns the stop. */
export function keepMemoryReducerWorking(everyMs: number = REDUCER_NUDGE_MS): () => void {
  nudgeMemoryReducer();
  const timer = setInterval(nudgeMemoryReducer, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** One allocation on the C++ heap: a script object, compiled and dropped, never run. */
export function nudgeMemoryReducer(): void {
  new Script("0", { filename: "memory-reducer-nudge" });
}
