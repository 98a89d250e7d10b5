/**
 * V8's memory reducer on the Node entry's runtime (src/runtime/memory-reducer.ts). From V8 13.1
 * (Node 24) the reducer reads a process that has never allocated on the C++ heap as allocating
 * at full speed, and never runs for it (only a watchdog 100 s after the last full collection).
 * A Node process that has allocated a little garbage and then idles: with the nudges the reducer
 * runs its collection within seconds (the test allows 40 s); without them, on V8 13 or later, it
 * does not. Read from V8's own trace (`--trace-memory-reducer`; part of `--trace-gc-verbose`
 * before V8 12), which a process writes out at exit.
 * The Node entry (`npm start`) is shown to nudge, at start and every 20 s, by counting the nudges
 * in it, not by its reducer's collection: whether an idle entry's reducer collects within 40 s
 * also rests on V8's other readings, which a loaded machine skews. A CI run on Node 20 (V8 11,
 * which does not weigh the C++ heap) read "high alloc" at every look for 40 s; run next to three
 * busy loops here, the entry's old generation read as busy at every look (mutator utilization
 * 0.84-0.96 against the 0.993 needed), V8 having timed its one full collection at start at 7 KB/ms,
 * about a hundredth of what it times on an idle machine.
 */
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ENTRY_SCRIPTS, scriptCommand } from "../../scripts/lib/entry-scripts.mjs";
import { REDUCER_NUDGE_MS } from "../../src/runtime/memory-reducer.js";
import { keepMemoryReducerWorking } from "../../src/runtime/package.js";
import { killSpawnedAfterEach, startEntry, stopEntry } from "../support/service-process.js";

killSpawnedAfterEach();

const MODULE = fileURLToPath(new URL("../../src/runtime/memory-reducer.ts", import.meta.url));
const V8_MAJOR = Number(process.versions.v8.split(".")[0]);
/** The reducer's trace: a flag of its own from V8 12 on, part of the verbose GC trace before. */
const TRACE_FLAG = spawnSync(process.execPath, ["--v8-options"], { encoding: "utf8" }).stdout.includes("--trace-memory-reducer ")
  ? "--trace-memory-reducer"
  : "--trace-gc-verbose";

/** A process that makes some garbage, idles `idleMs` (nudged every 2 s when `nudge`), exits; its V8 trace. */
function idleProcess(nudge: boolean, idleMs: number): Promise<string> {
  const code = `
    import { keepMemoryReducerWorking } from ${JSON.stringify(MODULE)};
    if (${nudge}) keepMemoryReducerWorking(2000);
    let kept = [];
    for (let i = 0; i < 400; i++) { kept.push(new Array(50_000).fill(i)); if (kept.length > 40) kept.shift(); }
    kept = undefined;
    const idle = setInterval(() => {}, 1000);
    setTimeout(() => { clearInterval(idle); process.exit(0); }, ${idleMs});
  `;
  const child = spawn(process.execPath, [TRACE_FLAG, "--import", "tsx", "--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
  // "close", not "exit": V8 writes its trace at exit, and it may still be in the pipe then.
  return new Promise((resolve, reject) =>
    child.once("close", (status) => (status === 0 ? resolve(out) : reject(new Error(`exited ${status}\n${err}`)))),
  );
}

/** The preload that counts the nudges in a process and prints the count at exit. */
const COUNT_NUDGES = fileURLToPath(new URL("../support/count-reducer-nudges.cjs", import.meta.url));

/** The built Node entry as `npm start` runs it (its V8 flags too), idle for `idleMs`, stopped (SIGTERM): how many nudges it made. */
async function entryNudges(idleMs: number): Promise<number> {
  const { args } = scriptCommand(process.cwd(), ENTRY_SCRIPTS.node);
  const svc = await startEntry([process.execPath, "--require", COUNT_NUDGES, ...args], { API_KEY: "k", MODEL_PROVIDER: "fake", MODEL_NAME: "fake" });
  await new Promise((resolve) => setTimeout(resolve, idleMs));
  const code = await stopEntry(svc);
  await svc.closed;
  const count = /memory reducer nudges: (\d+)/.exec(svc.stderr());
  if (code !== 0 || !count) throw new Error(`the entry exited ${String(code)}, its nudges not counted\nstderr:\n${svc.stderr()}`);
  return Number(count[1]);
}

/** How long each traced process idles. */
const IDLE_MS = 40_000;

const reducerRuns = (trace: string) => (trace.match(/Memory reducer: started GC/g) ?? []).length;
/** What a failed expectation shows: the reducer's lines of the trace, and how long the trace was. */
const reducerLines = (trace: string) => `${trace.split("\n").filter((l) => l.includes("Memory reducer")).join("\n")}\n(trace of ${trace.length} characters)`;

describe("V8's memory reducer on Node", () => {
  // Concurrent (each mostly waits), so with the `expect` of their own context.
  it.concurrent("runs for an idle process that is nudged; on V8 13 and later, not without the nudges", async ({ expect }) => {
    // 40 s: V8 looks every 8 s, and a look while the process is still busy starting (on a machine
    // running other tests) waits 8 s more; its watchdog, which would collect without the nudges
    // too, comes only 100 s after the last full collection.
    const [nudged, plain] = await Promise.all([idleProcess(true, IDLE_MS), idleProcess(false, IDLE_MS)]);
    expect(reducerRuns(nudged), reducerLines(nudged)).toBeGreaterThanOrEqual(1);
    expect(nudged).toMatch(/Memory reducer: low alloc/);
    if (V8_MAJOR >= 13) {
      expect(reducerRuns(plain), reducerLines(plain)).toBe(0);
      expect(plain).toMatch(/Memory reducer: high alloc/);
      expect(plain).not.toMatch(/Memory reducer: low alloc/);
    }
  }, IDLE_MS + 30_000);

  it.concurrent("is nudged by the Node entry (`npm start`) at start and every 20 s", async ({ expect }) => {
    // 25 s: the nudge at start and the one 20 s later.
    expect(REDUCER_NUDGE_MS).toBe(20_000);
    expect(await entryNudges(25_000)).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it("is the package's too, for an embedder serving the app itself", () => {
    const stop = keepMemoryReducerWorking(60_000);
    expect(typeof stop).toBe("function");
    stop();
  });

  it("keeps no process alive", () => {
    const code = `import { keepMemoryReducerWorking } from ${JSON.stringify(MODULE)}; keepMemoryReducerWorking(50);`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { timeout: 10_000, encoding: "utf8" });
    expect(run.error).toBeUndefined();
    expect(run.status).toBe(0);
  });
});
