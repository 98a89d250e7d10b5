// Shared by the scripts/bench-*.mjs benchmarks: option parsing, a watchdog, loading dist/, serving
// a fetch handler on 127.0.0.1, autocannon in a worker thread, small statistics, and the main
// wrapper that sets the exit code.
import { serve } from "@hono/node-server";
import autocannon from "autocannon";

/** One line on stdout. */
export const log = (line) => process.stdout.write(`${line}\n`);

/**
 * Parses `--flag value` and `--flag=value`. `numbers` maps a flag to the key of a number (finite,
 * >= 0), `switches` a flag to a key set to true, `strings` a flag to `[key, what]` (a non-empty
 * value; `what` names it in the error). `--help` / `-h` prints `usage` and exits 0; any other flag
 * throws. Returns a copy of `defaults` with what was given; clamping is the caller's.
 */
export function parseArgs(argv, { usage, defaults, numbers = {}, switches = {}, strings = {} }) {
  const opts = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split("=", 2);
    if (flag === "--help" || flag === "-h") {
      process.stdout.write(usage);
      process.exit(0);
    }
    if (Object.hasOwn(switches, flag)) {
      opts[switches[flag]] = true;
      continue;
    }
    if (Object.hasOwn(strings, flag)) {
      const [key, what] = strings[flag];
      if (value === undefined) value = argv[++i];
      if (!value) throw new Error(`${flag} needs ${what}`);
      opts[key] = value;
      continue;
    }
    const key = Object.hasOwn(numbers, flag) ? numbers[flag] : undefined;
    if (!key) throw new Error(`unknown option ${flag}`);
    if (value === undefined) value = argv[++i];
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a number`);
    opts[key] = n;
  }
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
