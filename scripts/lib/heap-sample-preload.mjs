// Loaded into the Node entry by scripts/heap-garbage.mjs (`node --import`), never by the service
// itself. Samples the entry's allocations from its start with V8's sampling heap profiler (through
// an in-process inspector session, nothing listening), counting the objects that full
// collections take when HEAP_GARBAGE_COLLECTED=1 and only the live ones otherwise. On SIGUSR2 it
// waits for the next full collection (an idle process gets one from V8's memory reducer), lets
// the reducer's follow-up collections run, then writes the profile to HEAP_GARBAGE_OUT.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { constants, PerformanceObserver } from "node:perf_hooks";

/** The reducer runs up to three full collections about 0.5 s apart: the profile waits for them. */
const AFTER_COLLECTION_MS = 3000;

const out = process.env.HEAP_GARBAGE_OUT;
if (!out) throw new Error("heap-sample-preload: HEAP_GARBAGE_OUT is not set");
const collected = process.env.HEAP_GARBAGE_COLLECTED === "1";

const session = new Session();
session.connect();
session.post("HeapProfiler.enable");
session.post("HeapProfiler.startSampling", { samplingInterval: 2048, includeObjectsCollectedByMajorGC: collected, includeObjectsCollectedByMinorGC: false });

let armed = false;
let writing = false;
const observer = new PerformanceObserver((list) => {
  if (!armed || writing) return;
  if (!list.getEntries().some((entry) => entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) return;
  writing = true;
  setTimeout(write, AFTER_COLLECTION_MS).unref();
});
observer.observe({ entryTypes: ["gc"] });
process.on("SIGUSR2", () => (armed = true));

function write() {
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error) throw error;
    writeFileSync(out, JSON.stringify(result.profile));
  });
}
