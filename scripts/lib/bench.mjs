// Shared by the benchmarks and diagnostics under scripts/: option parsing, a watchdog, loading
// dist/, serving a fetch handler on 127.0.0.1, a JSON upstream, autocannon in a worker thread,
// small statistics, and the main wrapper that sets the exit code.
import http from "node:http";
import { serve } from "@hono/node-server";
import autocannon from "autocannon";
import { numberOption, parseCommandLine } from "./args.mjs";

/** One line on stdout. */
export const log = (line) => process.stdout.write(`${line}\n`);

/**
 * The options of a benchmark, parsed strictly (scripts/lib/args.mjs: bad usage exits 2 with
 * `usage`, `--help` prints it). `numbers` maps a flag (without `--`) to its default (a given value
 * must be a finite number >= 0), `strings` a flag to its default, `switches` lists boolean flags.
 * Returns every option under its camelCase key (`--sample-concurrency` -> `sampleConcurrency`);
 * clamping is the caller's.
 */
export function benchOptions(argv, { name, usage, numbers = {}, strings = {}, switches = [] }) {
  const options = {};
  for (const flag of [...Object.keys(numbers), ...Object.keys(strings)]) options[flag] = { type: "string" };
  for (const flag of switches) options[flag] = { type: "boolean" };
  const { values } = parseCommandLine(argv, { name, usage, options });
  const camel = (flag) => flag.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  const opts = {};
  for (const [flag, fallback] of Object.entries(numbers)) opts[camel(flag)] = numberOption(values[flag], flag, fallback, { name, usage });
  for (const [flag, fallback] of Object.entries(strings)) opts[camel(flag)] = values[flag] ?? fallback;
  for (const flag of switches) opts[camel(flag)] = values[flag] === true;
  return opts;
}

/** Ends the process with exit code 1 after `budgetMs`, so a run always ends (does not keep it alive). */
export function watchdog(name, budgetMs) {
  setTimeout(() => {
    process.stderr.write(`${name}: gave up after ${Math.round(budgetMs / 1000)} s\n`);
    process.exit(1);
  }, budgetMs).unref();
}

/** The built package (dist/index.js); exits 2 with a hint when it is not there. */
export async function loadDist() {
  try {
    return await import(new URL("../../dist/index.js", import.meta.url).href);
  } catch (error) {
    process.stderr.write(`cannot load dist/index.js (run \`npx tsup --silent\` first): ${error.message}\n`);
    process.exit(2);
  }
}

/** Serves `fetch` with @hono/node-server on 127.0.0.1, port 0: `{ server, port }`. */
export function listen(fetch) {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve({ server, port: info.port }));
    server.once("error", reject);
  });
}

/**
 * A node:http upstream on 127.0.0.1, port 0, answering every request 200 with `body` as JSON (with
 * its length; connections kept alive a minute): `{ server, port }`. The policy benchmarks' API.
 */
export function jsonUpstream(body) {
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve({ server, port: server.address().port }));
  });
}

/** Closes a node server, cutting its open connections. */
export function closeServer(server) {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}

/**
 * autocannon for `seconds` against `url` in one worker thread (`workers: 1`), so the load generator
 * does not share the server's event loop; `options` are autocannon's (method, headers, connections...).
 */
export function autocannonInWorker(url, seconds, options) {
  return autocannon({ url, ...options, duration: seconds, workers: 1 });
}

/** The p-th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Runs `main`, then exits 0, or 1 with "<name> failed: <stack>"; `cleanup` runs before either exit. */
export function runMain(name, main, cleanup = () => {}) {
  main().then(
    () => {
      cleanup();
      process.exit(0);
    },
    (error) => {
      process.stderr.write(`${name} failed: ${error?.stack ?? error}\n`);
      cleanup();
      process.exit(1);
    },
  );
}

/** Logs a table: a header row, a rule, then `rows` (strings); the first column left-aligned, the rest right-aligned. */
export function logTable(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  log(line(header));
  log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) log(line(r));
}
