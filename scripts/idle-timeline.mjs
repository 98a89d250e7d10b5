// Where the Node entry's RSS sits, second by second, while it holds waiting conversations: V8's
// young generation, its old generation (in use and committed) and the rest, and when full
// collections come. All on 127.0.0.1.
//
//   npx tsup --silent && node scripts/idle-timeline.mjs [--streams 10000] [--seconds 30]
//       [--flags="--max-semi-space-size=4"]
//
// A diagnostic, not a benchmark with a target. bench:chat reads the entry's RSS 5 s after opening
// 10,000 /chat streams, and again a minute later; this says what the first reading holds that the
// second does not. The Node entry (as `npm start` runs it, with the Node or V8 flags of --flags
// added, written with `=` since they start with dashes; fake model, heartbeats every 2 s as in
// bench:chat) is started with scripts/lib/heap-spaces-preload.mjs, which records its heap spaces
// every 250 ms. --streams streams are opened in two halves as bench:chat opens them, then held
// --seconds. One row a second from the end of the opening: RSS, the young generation's committed
// bytes, the old generation's bytes in use and committed, the other spaces' committed bytes, what
// is not V8's heap (the binary's pages, malloc, sockets), and the full collections of that second.
// The row at 5 s is bench:chat's reading.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { usageError } from "./lib/args.mjs";
import { startEntry, stopEntry } from "./lib/bench-runtimes.mjs";
import { benchOptions, log, logTable, runMain, watchdog } from "./lib/bench.mjs";
import { IDLE_REQUEST, SERVICE_ENV } from "./lib/chat-workload.mjs";
import { openInHalves } from "./lib/idle-streams.mjs";

const USAGE = 'usage: node scripts/idle-timeline.mjs [--streams 10000] [--seconds 30] [--flags="--max-semi-space-size=4"]\n';
const opts = benchOptions(process.argv.slice(2), {
  name: "idle-timeline",
  usage: USAGE,
  numbers: { streams: 10_000, seconds: 30 },
  strings: { flags: "" },
});
if (opts.streams < 2 || opts.seconds < 1) usageError("idle-timeline", USAGE, "--streams needs at least 2 and --seconds at least 1");
const flags = opts.flags.split(/\s+/).filter(Boolean);
if (flags.some((f) => !f.startsWith("--"))) usageError("idle-timeline", USAGE, "--flags takes Node or V8 flags (each starting with --)");

const PRELOAD = fileURLToPath(new URL("./lib/heap-spaces-preload.mjs", import.meta.url));
const MB = 1024 * 1024;
/** bench:chat reads the entry's RSS this long after the opening. */
const READING_S = 5;

const children = new Set();
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
watchdog("idle-timeline", (opts.seconds + 180) * 1000);

async function main() {
  const out = join(tmpdir(), `idle-timeline-${process.pid}.jsonl`);
  const env = { ...SERVICE_ENV, SSE_HEARTBEAT_S: "2", HEAP_TIMELINE_OUT: out };
  // npm start's command with the preload and --flags before the entry's script.
  const wrap = (command, args) => [command, [...args.slice(0, -1), "--import", PRELOAD, ...flags, ...args.slice(-1)]];
  const { child, port } = await startEntry("node", env, children, { wrap });
  let handle;
  try {
    log(`idle-timeline: node ${process.version}, ${opts.streams} waiting conversations on the Node entry${flags.length ? ` with ${flags.join(" ")}` : ""}`);
    handle = await openInHalves(port, opts.streams, IDLE_REQUEST);
    const opened = performance.timeOrigin + performance.now();
    log(`${handle.started} streams held (${handle.failed} failed); the times below count from the end of the opening`);
    await new Promise((r) => setTimeout(r, opts.seconds * 1000));
    report(readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l)), opened);
  } finally {
    handle?.close();
    await stopEntry(child);
    children.delete(child);
    rmSync(out, { force: true });
  }
}

function report(records, opened) {
  const mb = (bytes) => (bytes / MB).toFixed(1);
  const rows = [];
  const collections = records.filter((r) => r.fullCollection !== undefined);
  const samples = records.filter((r) => r.rss !== undefined);
  let reading;
  for (let s = 0; s <= opts.seconds; s++) {
    // The last sample taken by this second.
    const at = opened + s * 1000;
    const sample = samples.findLast((r) => r.t <= at);
    if (!sample) continue;
    const { new: young = [0, 0], old = [0, 0], ...others } = sample.spaces;
    const otherCommitted = Object.values(others).reduce((sum, [, committed]) => sum + committed, 0);
    const heap = young[1] + old[1] + otherCommitted;
    const full = collections.filter((c) => c.t > at - 1000 && c.t <= at).length;
    if (s === READING_S) reading = { sample, young, old };
    rows.push([`${s} s${s === READING_S ? " (bench:chat's reading)" : ""}`, mb(sample.rss), mb(young[1]), `${mb(old[0])} / ${mb(old[1])}`, mb(otherCommitted), mb(sample.rss - heap), full > 0 ? String(full) : ""]);
  }
  log("");
  logTable(["after the opening", "RSS (MB)", "young, committed", "old, in use / committed", "other spaces", "not V8's heap", "full collections"], rows);
  const before = collections.filter((c) => c.t <= opened).at(-1);
  const after = collections.find((c) => c.t > opened);
  log("");
  if (reading)
    log(
      `at ${READING_S} s: RSS ${mb(reading.sample.rss)} MB, of which the young generation holds ${mb(reading.young[1])} MB committed and the old generation ` +
        `${mb(reading.old[1] - reading.old[0])} MB committed beyond what it uses`,
    );
  log(
    `last full collection before the end of the opening: ${before ? `${((before.t - opened) / 1000).toFixed(1)} s` : "none"}; ` +
      `first after it: ${after ? `${((after.t - opened) / 1000).toFixed(1)} s` : `none within ${opts.seconds} s`}`,
  );
}

runMain("idle-timeline", main);
