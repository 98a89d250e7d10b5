// bench-chat --runtime node,bun,deno: the same chat figures for each runtime's built entry in one
// run. Each entry (dist/node.js, dist/bun.js, dist/deno.js, with the command of `npm start`, `npm
// run start:bun`, `npm run start:deno`, read from package.json) is spawned as a process of its own on a free
// loopback port with the memory store and the fake model, then driven from this process exactly
// as bench-chat drives the in-process service: autocannon (warm-up, then measured), the
// first-event sampler, and the entry's RSS after the load (/proc/<pid>/status). One runtime at a
// time, so they never share the machine's two cores.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { log, logTable } from "./bench.mjs";
import { ENTRY_SCRIPTS, scriptCommand } from "./entry-scripts.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const RUNTIMES = Object.keys(ENTRY_SCRIPTS);

/** `node,bun` or `all` -> ["node", "bun"]; an unknown name is a usage error (exit 2). */
export function parseRuntimes(value, usage) {
  const names = value === "all" ? RUNTIMES : value.split(",").map((s) => s.trim()).filter(Boolean);
  const bad = names.filter((n) => !RUNTIMES.includes(n));
  if (names.length === 0 || bad.length > 0) {
    process.stderr.write(`bench-chat: --runtime takes ${RUNTIMES.join(", ")} or all, comma-separated${bad.length ? ` (not ${bad.join(", ")})` : ""}\n${usage}`);
    process.exit(2);
  }
  return [...new Set(names)];
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A process's main-thread CPU time (user + system) in microseconds, from Linux's /proc (whose
 * figures count USER_HZ ticks of 10 ms); undefined where /proc cannot be read.
 */
export function mainThreadCpuUs(pid = process.pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
}

export const rssMb = (pid) => {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
    return kb / 1024;
  } catch {
    return NaN;
  }
};

/**
 * Spawns the entry and resolves once it answers /health: `{ child, port, startMs }`. `wrap`
 * (command, args) -> [command, args] runs it inside something, a memory cgroup say
 * (memory-cgroup.mjs), with the same pid.
 */
export async function startEntry(runtime, env, children, { wrap } = {}) {
  const port = await freePort();
  const script = scriptCommand(ROOT, ENTRY_SCRIPTS[runtime]);
  const [command, args] = wrap ? wrap(script.command, script.args) : [script.command, script.args];
  const scriptEnv = script.env;
  const t0 = performance.now();
  const child = spawn(command, args, {
    cwd: ROOT,
    // nothing leaves this machine: no update check (Deno), no crash upload (Bun)
    env: { PATH: process.env.PATH, HOME: process.env.HOME ?? "/tmp", DENO_NO_UPDATE_CHECK: "1", DO_NOT_TRACK: "1", ...scriptEnv, ENV_FILE: "/nonexistent/.env", HOST: "127.0.0.1", PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let err = "";
  child.stdout.resume();
  child.stderr.setEncoding("utf8").on("data", (s) => (err = (err + s).slice(-4096)));
  let exited = false;
  child.once("exit", () => (exited = true));
  // Ready once /health answers (LOG_LEVEL=WARNING, as in the in-process bench, hides the listening line).
  for (const until = performance.now() + 20_000; ; ) {
    if (exited) throw new Error(`${runtime}: exited (${child.exitCode ?? child.signalCode}) before listening\n${err}`);
    if (performance.now() > until) throw new Error(`${runtime}: not answering /health after 20 s\n${err}`);
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { child, port, startMs: performance.now() - t0 };
}

export async function stopEntry(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * The figures of each runtime in turn, then one table with a column per runtime.
 * `measure(url)` is bench-chat's own throughput and first-event measurement of a URL.
 */
export async function benchRuntimes({ runtimes, env, measure, children }) {
  const results = {};
  for (const runtime of runtimes) {
    const { child, port, startMs } = await startEntry(runtime, env, children);
    try {
      const rssIdle = rssMb(child.pid);
      const figures = await measure(runtime, `http://127.0.0.1:${port}/chat`);
      results[runtime] = { ...figures, startMs, rssIdle, rssLoaded: rssMb(child.pid) };
    } finally {
      await stopEntry(child);
      children.delete(child);
    }
  }

  const f = (v, d = 1) => (typeof v === "number" && Number.isFinite(v) ? v.toFixed(d) : "-");
  const col = (fn) => runtimes.map((r) => fn(results[r]));
  const rows = [
    ["requests/s (mean)", ...col((x) => f(x.rps, 0))],
    ["chat turns/s (2xx / s)", ...col((x) => f(x.turnsPerSecond, 0))],
    ["first event p50 (ms)", ...col((x) => f(x.ttfe.p50, 2))],
    ["first event p99 (ms)", ...col((x) => f(x.ttfe.p99, 2))],
    ["full response p50 (ms)", ...col((x) => f(x.latP50, 0))],
    ["full response p99 (ms)", ...col((x) => f(x.latP99, 0))],
    ["errors + non-2xx", ...col((x) => String(x.errors + x.non2xx + x.timeouts + x.ttfe.badStatus + x.ttfe.wrongCount + x.ttfe.errors))],
    ["start to first /health (ms)", ...col((x) => f(x.startMs, 0))],
    ["RSS idle (MB)", ...col((x) => f(x.rssIdle))],
    ["RSS after load (MB)", ...col((x) => f(x.rssLoaded))],
  ];
  log("");
  logTable(["", ...runtimes], rows);
  return results;
}
