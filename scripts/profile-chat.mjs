// Where POST /chat's time and allocations go, on the main thread, all on 127.0.0.1.
//
//   npx tsup --silent && node scripts/profile-chat.mjs [--seconds 10] [--warmup 2] [--connections 50]
//       [--top 30] [--alloc] [--dist dist]
//
// A diagnostic, not a benchmark with a target: bench:chat says how fast /chat is against a bare
// Hono route; this says where the service's main thread spends a chat. The service is the built
// package (--dist, a build's folder from the working directory, dist/ by default) served as
// bench:chat serves it (serveNode, the fake model, bench:chat's workload of 20 events an answer),
// driven by autocannon in a worker thread. After --warmup seconds, V8's CPU profiler samples the
// main thread (every 100 µs) for --seconds, and the samples are counted by function and by file
// where the code was written (src/..., or the bundled dependency's file, through the build's
// source maps; scripts/lib/source-frames.mjs). The idle share is time the main thread waited for
// the load generator or the network; the write of each answer to its socket shows as
// writeUtf8String (or writev), with all the kernel does within it (on loopback, waking the
// reader's thread: `perf record -g -p <pid>` tells them apart, README "Benchmarks"). With
// --alloc, a second segment runs under V8's sampling heap profiler, counting the objects that
// collections took too, and prints the bytes allocated a chat by allocation site.
// Sampled: each figure is an estimate, and a share under 0.5% is noise.
import { Session } from "node:inspector/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { usageError } from "./lib/args.mjs";
import { autocannonInWorker, benchOptions, closeServer, log, logTable, runMain, watchdog } from "./lib/bench.mjs";
import { BODY, HEADERS, SERVICE_ENV } from "./lib/chat-workload.mjs";
import { frameName, resolved, shortFile } from "./lib/source-frames.mjs";

const USAGE = "usage: node scripts/profile-chat.mjs [--seconds 10] [--warmup 2] [--connections 50] [--top 30] [--alloc] [--dist dist]\n";
const opts = benchOptions(process.argv.slice(2), {
  name: "profile-chat",
  usage: USAGE,
  numbers: { seconds: 10, warmup: 2, connections: 50, top: 30 },
  strings: { dist: "dist" },
  switches: ["alloc"],
});
if (opts.seconds < 1 || opts.connections < 1 || opts.top < 1) usageError("profile-chat", USAGE, "--seconds, --connections and --top need at least 1");

watchdog("profile-chat", (opts.warmup + opts.seconds * (opts.alloc ? 2 : 1)) * 1000 + 120_000);

const percent = (part, whole) => `${((100 * part) / whole).toFixed(2)}%`;

/** Samples by function and by file: `[name, count][]` each, largest first. */
function tallyCpu(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map();
  const byFile = new Map();
  for (const id of profile.samples) {
    const frame = resolved(byId.get(id).callFrame);
    // Frames without a file are V8's and the runtime's own: (idle), (program), a builtin.
    const name = frame.url ? frameName(frame) : frame.functionName || "(native)";
    const file = frame.url ? shortFile(frame.url) : frame.functionName || "(native)";
    byFunction.set(name, (byFunction.get(name) ?? 0) + 1);
    byFile.set(file, (byFile.get(file) ?? 0) + 1);
  }
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  return { total: profile.samples.length, byFunction: sorted(byFunction), byFile: sorted(byFile) };
}

/** Bytes allocated by the innermost frame of each sampled allocation: `[site, bytes][]`, largest first. */
function tallyAlloc(profile) {
  const bySite = new Map();
  let total = 0;
  const walk = (node) => {
    if (node.selfSize > 0) {
      const site = frameName(resolved(node.callFrame));
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return { total, bySite: [...bySite].sort((a, b) => b[1] - a[1]) };
}

async function main() {
  // From the working directory, as ab-builds reads its folders: a copied build (dist-a) or dist/.
  const dist = pathToFileURL(path.resolve(opts.dist, "index.js"));
  const { createApp, serveNode } = await import(dist.href).catch((error) => {
    process.stderr.write(`profile-chat: cannot load ${dist.pathname} (run \`npx tsup --silent\` first): ${error.message}\n`);
    process.exit(2);
  });
  const app = await createApp({ env: SERVICE_ENV, logWrite: () => {} });
  const server = await serveNode({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${server.port}/chat`;
  const cannon = (seconds) => autocannonInWorker(url, seconds, { method: "POST", headers: HEADERS, body: BODY, connections: opts.connections });
  const session = new Session();
  session.connect();
  try {
    log(`profile-chat: node ${process.version}, ${opts.dist}/index.js, ${opts.connections} connections, ${opts.warmup} s warm-up, ${opts.seconds} s profiled`);
    if (opts.warmup > 0) await cannon(opts.warmup);

    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 100 });
    await session.post("Profiler.start");
    const cpuRun = await cannon(opts.seconds);
    const { profile } = await session.post("Profiler.stop");
    const chats = cpuRun["2xx"];
    const cpu = tallyCpu(profile);
    const share = (name) => cpu.byFunction.find(([n]) => n === name)?.[1] ?? 0;
    log(`${chats} chats (${(chats / opts.seconds).toFixed(0)}/s, ${cpuRun.non2xx} non-2xx, ${cpuRun.errors} errors), ${cpu.total} samples`);
    log(`main thread: idle ${percent(share("(idle)"), cpu.total)}, garbage collector ${percent(share("(garbage collector)"), cpu.total)}, busy ${((opts.seconds * 1e6 * (1 - share("(idle)") / cpu.total)) / chats).toFixed(1)} µs a chat\n`);
    logTable(["function (self time)", "share"], cpu.byFunction.slice(0, opts.top).map(([name, n]) => [name, percent(n, cpu.total)]));
    log("");
    logTable(["file (self time)", "share"], cpu.byFile.slice(0, opts.top).map(([name, n]) => [name, percent(n, cpu.total)]));

    if (opts.alloc) {
      await session.post("HeapProfiler.enable");
      await session.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true });
      const allocRun = await cannon(opts.seconds);
      const { profile: heap } = await session.post("HeapProfiler.stopSampling");
      const alloc = tallyAlloc(heap);
      const perChat = allocRun["2xx"];
      log(`\n${perChat} chats under the sampling heap profiler: about ${(alloc.total / perChat / 1024).toFixed(1)} KB allocated a chat on the main thread\n`);
      logTable(["allocation site", "bytes a chat"], alloc.bySite.slice(0, opts.top).map(([site, bytes]) => [site, (bytes / perChat).toFixed(0)]));
    }
  } finally {
    session.disconnect();
    await closeServer(server.server);
    await app.close();
  }
}

runMain("profile-chat", main);
