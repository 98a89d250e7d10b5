// Loaded into the Node entry by scripts/idle-timeline.mjs (`node --import`), never by the service
// itself. Every 250 ms it appends one JSON line to HEAP_TIMELINE_OUT: the time, the process's
// RSS, and each V8 heap space's bytes in use and committed (resident); each full collection is a
// line of its own, with its time.
import { appendFileSync, writeFileSync } from "node:fs";
import { constants, PerformanceObserver, performance } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";

const out = process.env.HEAP_TIMELINE_OUT;
if (!out) throw new Error("heap-spaces-preload: HEAP_TIMELINE_OUT is not set");

writeFileSync(out, "");
const line = (record) => appendFileSync(out, `${JSON.stringify({ t: performance.timeOrigin + performance.now(), ...record })}\n`);

setInterval(() => {
  const spaces = {};
  for (const s of getHeapSpaceStatistics()) spaces[s.space_name.replace(/_space$/, "")] = [s.space_used_size, s.physical_space_size];
  line({ rss: process.memoryUsage.rss(), spaces });
}, 250).unref();

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) line({ fullCollection: entry.duration });
}).observe({ entryTypes: ["gc"] });
