// Two builds of the service side by side on this machine: what one change costs or saves, all on
// 127.0.0.1 (Linux: it reads /proc).
//
//   node scripts/ab-builds.mjs --a DIR --b DIR [--rounds 20] [--seconds 3] [--connections 50]
//   node scripts/ab-builds.mjs --a DIR --b DIR --idle [--rounds 4] [--streams 10000] [--hold 5] [--settle 20]
//   either with [--a-flags=FLAGS] [--b-flags=FLAGS], e.g. --b-flags=--no-concurrent-recompilation
//
// DIR is a build's output folder: `npx tsup --silent && cp -r dist dist-a` on one version, the same
// into dist-b on the other (git ignores dist-*/). Each is copied whole (its chunks import one
// another) and kept in this repository, whose node_modules it imports yaml and the optional
// packages from. The two may be one folder, told apart by --a-flags and --b-flags: Node or V8
// flags (each starting with --; several in one quoted value, written with `=` since they start
// with dashes) given to that build's process only. A figure moves with the machine from one
// minute to the next by more than most changes move it, so the two builds are measured in turn,
// the first of each pair alternating, and the paired differences count, not two separate runs.
//
// Default: the cost of a chat. Each build's package (DIR/index.js) is served in a child process of
// its own as bench:chat serves dist/ (scripts/lib/ab-serve.mjs), and autocannon drives each in
// turn for --seconds (bench:chat's workload, 20 events an answer); the child's main-thread CPU
// time (/proc/<pid>/task/<pid>/stat) over the segment, divided by the chats answered, is the
// build's cost of a chat, freer of the machine's drift than turns/s. Prints each pair, then the
// medians and the median of the paired differences (B - A).
// --idle: the memory of waiting conversations. Each build's Node entry (DIR/node.js with `npm
// start`'s flags) is started fresh in turn; --streams /chat streams whose model sleeps are opened
// in two halves, and its RSS is read as started, --hold seconds after the opening and --settle
// seconds after that (bench:chat's reading 5 s after the opening, and one after V8's
// memory-reducing collection has usually come). Prints each start, then the medians.
import { fork } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { usageError } from "./lib/args.mjs";
import { autocannonInWorker, benchOptions, log, logTable, median, runMain, watchdog } from "./lib/bench.mjs";
import { mainThreadCpuUs, rssMb, startEntry, stopEntry } from "./lib/bench-runtimes.mjs";
import { BODY, HEADERS, IDLE_REQUEST, SERVICE_ENV } from "./lib/chat-workload.mjs";
import { openInHalves } from "./lib/idle-streams.mjs";

const USAGE =
  "usage: node scripts/ab-builds.mjs --a DIR --b DIR [--rounds 20] [--seconds 3] [--connections 50]\n" +
  "       node scripts/ab-builds.mjs --a DIR --b DIR --idle [--rounds 4] [--streams 10000] [--hold 5] [--settle 20]\n" +
  "       either with [--a-flags=FLAGS] [--b-flags=FLAGS] (Node or V8 flags for that build's process)\n";
const argv = process.argv.slice(2);
const opts = benchOptions(argv, {
  name: "ab-builds",
  usage: USAGE,
  numbers: { rounds: 20, seconds: 3, connections: 50, streams: 10_000, hold: 5, settle: 20 },
  strings: { a: "", b: "", "a-flags": "", "b-flags": "" },
  switches: ["idle"],
});
if (opts.idle && !argv.some((a) => a.startsWith("--rounds"))) opts.rounds = 4;
opts.rounds = Math.floor(opts.rounds);
if (opts.rounds < 1 || opts.seconds < 1 || opts.connections < 1 || opts.streams < 2) usageError("ab-builds", USAGE, "--rounds, --seconds and --connections need at least 1, --streams at least 2");
const builds = ["a", "b"].map((key) => {
  if (!opts[key]) usageError("ab-builds", USAGE, `--${key} names a build's folder`);
  const dir = path.resolve(opts[key]);
  if (!existsSync(path.join(dir, "index.js")) || !existsSync(path.join(dir, "node.js"))) usageError("ab-builds", USAGE, `--${key} ${opts[key]}: no index.js and node.js there (a tsup build's folder)`);
  const flags = opts[`${key}Flags`].split(/\s+/).filter(Boolean);
  if (flags.some((f) => !f.startsWith("--"))) usageError("ab-builds", USAGE, `--${key}-flags takes Node or V8 flags (each starting with --)`);
  return { dir, flags, label: `${key.toUpperCase()} (${opts[key]}${flags.length ? ` ${flags.join(" ")}` : ""})` };
});
if (process.platform !== "linux") usageError("ab-builds", USAGE, "it reads /proc: Linux only");

const perRoundMs = opts.idle ? 2 * (opts.hold + opts.settle + 60) * 1000 : 2 * (opts.seconds + 1) * 1000;
watchdog("ab-builds", opts.rounds * perRoundMs + 5 * 60 * 1000);

const children = new Set();
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

const us = (v) => v.toFixed(1);
const signed = (v) => `${v >= 0 ? "+" : ""}${v.toFixed(1)}`;

function serve(build) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL("./lib/ab-serve.mjs", import.meta.url)), [build.dir], { execArgv: [...process.execArgv, ...build.flags], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    children.add(child);
    child.once("message", (msg) => resolve({ child, url: `http://127.0.0.1:${msg.port}/chat` }));
    child.once("exit", (code, signal) => reject(new Error(`${build.label}: its server exited (${code ?? signal})`)));
  });
}

async function chatCost() {
  log(`ab-builds: node ${process.version}, a chat's main-thread CPU, ${opts.rounds} pairs of ${opts.seconds} s segments, ${opts.connections} connections`);
  const served = await Promise.all(builds.map(serve));
  const segment = async (i, seconds) => {
    const { child, url } = served[i];
    const before = mainThreadCpuUs(child.pid);
    const r = await autocannonInWorker(url, seconds, { method: "POST", headers: HEADERS, body: BODY, connections: opts.connections });
    const chats = r["2xx"];
    if (chats === 0 || r.non2xx > 0 || r.errors > 0) throw new Error(`${builds[i].label}: ${chats} chats, ${r.non2xx} non-2xx, ${r.errors} errors`);
    return { us: (mainThreadCpuUs(child.pid) - before) / chats, perSecond: chats / seconds };
  };
  for (let i = 0; i < 2; i++) await segment(i, 2); // warm-up: both paths compiled
  const results = [[], []];
  const diffs = [];
  for (let round = 0; round < opts.rounds; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    const pair = [];
    for (const i of order) pair[i] = await segment(i, opts.seconds);
    results[0].push(pair[0]);
    results[1].push(pair[1]);
    diffs.push(pair[1].us - pair[0].us);
    log(`pair ${round + 1}: A ${us(pair[0].us)} µs a chat (${pair[0].perSecond.toFixed(0)}/s), B ${us(pair[1].us)} µs (${pair[1].perSecond.toFixed(0)}/s), B - A ${signed(diffs.at(-1))} µs`);
  }
  log("");
  logTable(
    ["(medians)", "main-thread CPU a chat (µs)", "chats/s"],
    builds.map((b, i) => [b.label, us(median(results[i].map((r) => r.us))), median(results[i].map((r) => r.perSecond)).toFixed(0)]),
  );
  const sorted = [...diffs].sort((x, y) => x - y);
  log(`\nB - A: ${signed(median(diffs))} µs a chat at the median of ${diffs.length} pairs (pairs from ${signed(sorted[0])} to ${signed(sorted.at(-1))})`);
}

async function idleMemory() {
  log(`ab-builds: node ${process.version}, ${opts.streams} waiting conversations on each build's Node entry, ${opts.rounds} fresh starts each, in turn`);
  const readings = [[], []];
  for (let round = 0; round < opts.rounds; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const entry = path.join(builds[i].dir, "node.js");
      // npm start's command with this build's entry, its --a-flags or --b-flags before the entry.
      const wrap = (command, args) => [command, args.flatMap((arg) => (arg === "dist/node.js" ? [...builds[i].flags, entry] : [arg]))];
      const { child, port } = await startEntry("node", { ...SERVICE_ENV, SSE_HEARTBEAT_S: "2" }, children, { wrap });
      let handle;
      try {
        await new Promise((r) => setTimeout(r, 500));
        const started = rssMb(child.pid);
        handle = await openInHalves(port, opts.streams, IDLE_REQUEST, { settleMs: 2000 });
        if (handle.failed > 0) throw new Error(`${builds[i].label}: ${handle.failed} of ${opts.streams} streams failed to open`);
        await new Promise((r) => setTimeout(r, opts.hold * 1000));
        const held = rssMb(child.pid);
        await new Promise((r) => setTimeout(r, opts.settle * 1000));
        const settled = rssMb(child.pid);
        readings[i].push({ started, held, settled });
        log(`start ${round + 1} ${builds[i].label}: RSS ${started.toFixed(1)} MB started, ${held.toFixed(1)} MB ${opts.hold} s after the opening, ${settled.toFixed(1)} MB ${opts.settle} s later`);
      } finally {
        handle?.close();
        await stopEntry(child);
        children.delete(child);
      }
    }
  }
  log("");
  logTable(
    ["(medians, MB)", "started", `${opts.hold} s after the opening`, `${opts.settle} s later`],
    builds.map((b, i) => [b.label, ...["started", "held", "settled"].map((k) => median(readings[i].map((r) => r[k])).toFixed(1))]),
  );
}

runMain("ab-builds", () => (opts.idle ? idleMemory() : chatCost()));
