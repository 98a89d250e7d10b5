// What the opening of waiting conversations leaves in V8's old generation until a full collection,
// by allocation site, on the Node entry, all on 127.0.0.1.
//
//   npx tsup --silent && node scripts/heap-garbage.mjs [--streams 10000] [--wait 120] [--top 15]
//
// A diagnostic, not a benchmark with a target: bench:chat reads the Node entry's RSS 5 s after
// opening 10,000 /chat streams and again a minute later, and the difference is garbage that only
// a full collection takes (V8 runs one for an idle process from its memory reducer). This says
// what that garbage is. The Node entry (as `npm start` runs it, fake model, heartbeats every 2 s)
// is started twice with scripts/lib/heap-sample-preload.mjs, which samples its allocations with
// V8's sampling heap profiler: once counting the objects that full collections took, once the
// live ones only. Each time --streams streams are opened in two halves, then the profile is taken
// right after the next full collection (up to --wait seconds). The difference of the two, per
// allocation site and per kind (Node's sockets, socket writes, zod, AbortSignals, the service's
// own code...), is what was promoted or allocated in the old generation and then died; the live
// run's own sites follow, by what they hold. Frames of the built entry are named where they were
// written (src/..., or the bundled dependency's file), through the build's source maps. Sampled,
// so each figure is an estimate; one pair of runs.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startEntry, stopEntry } from "./lib/bench-runtimes.mjs";
import { usageError } from "./lib/args.mjs";
import { benchOptions, log, logTable, runMain, watchdog } from "./lib/bench.mjs";
import { openInHalves } from "./lib/idle-streams.mjs";
import { frameName, resolved } from "./lib/source-frames.mjs";

const USAGE = "usage: node scripts/heap-garbage.mjs [--streams 10000] [--wait 120] [--top 15]\n";
const opts = benchOptions(process.argv.slice(2), {
  name: "heap-garbage",
  usage: USAGE,
  numbers: { streams: 10_000, wait: 120, top: 15 },
});
if (opts.streams < 2 || opts.wait < 1) usageError("heap-garbage", USAGE, "--streams needs at least 2 and --wait at least 1");

const PRELOAD = fileURLToPath(new URL("./lib/heap-sample-preload.mjs", import.meta.url));
const ENV = { API_KEY: "bench", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "WARNING", RUN_TIMEOUT_S: "900", SSE_HEARTBEAT_S: "2" };
const IDLE_REQUEST = {
  headers: { authorization: "Bearer bench", "content-type": "application/json" },
  // The model sleeps longer than any run of this script lasts: no conversation ends before the profile.
  body: JSON.stringify({ message: "/sleep 500000\nidle" }),
};
const MB = 1024 * 1024;

const children = new Set();
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
watchdog("heap-garbage", 2 * (opts.wait + 120) * 1000);

/** One run of the entry: its allocation profile taken at the first full collection once the streams are held, and how many were. */
async function sample(collected) {
  const out = join(tmpdir(), `heap-garbage-${collected ? "collected" : "live"}-${process.pid}.json`);
  rmSync(out, { force: true });
  const env = { ...ENV, HEAP_GARBAGE_OUT: out, HEAP_GARBAGE_COLLECTED: collected ? "1" : "0" };
  const { child, port } = await startEntry("node", env, children, { wrap: (command, args) => [command, ["--import", PRELOAD, ...args]] });
  let handle;
  try {
    handle = await openInHalves(port, opts.streams, IDLE_REQUEST);
    const held = handle.started;
    child.kill("SIGUSR2");
    const t0 = performance.now();
    for (;;) {
      try {
        const profile = JSON.parse(readFileSync(out, "utf8"));
        log(`${collected ? "collected" : "live"}: ${held} streams held, profile taken ${((performance.now() - t0) / 1000).toFixed(1)} s after the opening`);
        return { profile, held };
      } catch {
        // not written yet (or still being written)
      }
      if (performance.now() - t0 > opts.wait * 1000) throw new Error(`no full collection within ${opts.wait} s of the opening (--wait)`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    handle?.close();
    await stopEntry(child);
    children.delete(child);
    rmSync(out, { force: true });
  }
}

/** The kind of an allocation, from its stack (innermost first). */
function kindOf(stack) {
  const near = stack.slice(0, 6).map((f) => `${f.functionName} ${f.url}`);
  const any = (re) => near.some((s) => re.test(s));
  if (any(/beatIfIdle|writeGeneric|writeOrBuffer/)) return "socket writes (heartbeats, events)";
  if (any(/^(Socket|onconnection) node:net/)) return "node:net sockets and their stream state";
  if (any(/get signal|AbortSignal|abort_controller/)) return "AbortSignals";
  if (any(/\/zod\//)) return "zod";
  if (/event_target/.test(stack[0].url)) return "event listeners";
  if (/^src\//.test(stack[0].url)) return "the service's own code";
  if (/node_modules\/(hono|@hono)\//.test(stack[0].url)) return "hono and @hono/node-server";
  if (/node_modules/.test(stack[0].url)) return "other dependencies";
  if (stack[0].url.startsWith("node:")) return "Node, other";
  return "V8 and native";
}

/** Bytes by allocation site (the innermost three frames) and by kind. */
function tally(profile) {
  const sites = new Map();
  const kinds = new Map();
  const walk = (node, stack) => {
    const here = [resolved(node.callFrame), ...stack];
    if (node.selfSize > 0) {
      const site = here.slice(0, 3).map(frameName).join(" < ");
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
      const kind = kindOf(here);
      kinds.set(kind, (kinds.get(kind) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(profile.head, []);
  return { sites, kinds };
}

function rows(withCollected, live) {
  const keys = new Set([...withCollected.keys(), ...live.keys()]);
  return [...keys].map((k) => ({ k, all: withCollected.get(k) ?? 0, live: live.get(k) ?? 0 })).map((r) => ({ ...r, garbage: r.all - r.live })).sort((a, b) => b.garbage - a.garbage);
}

async function main() {
  log(`heap-garbage: node ${process.version}, ${opts.streams} waiting conversations on the Node entry, sampled twice`);
  const withCollected = await sample(true);
  const live = await sample(false);
  const a = tally(withCollected.profile);
  const b = tally(live.profile);
  const held = Math.min(withCollected.held, live.held);
  if (held === 0) throw new Error("no stream was held");
  const f = (bytes) => (bytes / MB).toFixed(1);
  const kinds = rows(a.kinds, b.kinds);
  const total = kinds.reduce((s, r) => s + r.garbage, 0);
  log("");
  logTable(
    ["kind", "taken by full collections (MB)", "with them (MB)", "live (MB)"],
    [...kinds.map((r) => [r.k, f(r.garbage), f(r.all), f(r.live)]), ["all", f(total), f(kinds.reduce((s, r) => s + r.all, 0)), f(kinds.reduce((s, r) => s + r.live, 0))]],
  );
  log("");
  const sites = rows(a.sites, b.sites);
  logTable(["allocation site (innermost three frames)", "taken by full collections (MB)"], sites.slice(0, opts.top).map((r) => [r.k, f(r.garbage)]));
  log("");
  logTable(["allocation site (innermost three frames)", "live (MB)"], [...sites].sort((x, y) => y.live - x.live).slice(0, opts.top).map((r) => [r.k, f(r.live)]));
  log(`\n${f(total)} MB of objects taken by full collections: ${(total / held / 1024).toFixed(2)} KB a waiting conversation (two sampled runs; an estimate)`);
}

runMain("heap-garbage", main);
