/**
 * A built runtime entry (dist/node.js, dist/bun.js, dist/deno.js) as a real process on loopback:
 * spawned with only the environment a test gives (plus PATH and HOME), ready once it printed its
 * "listening" line. `npm test` builds dist first; Bun and Deno are the dev dependencies' binaries.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach } from "vitest";
import { ENTRY_SCRIPTS, scriptCommand } from "../../scripts/lib/entry-scripts.mjs";

export type RuntimeName = "node" | "bun" | "deno";
/** A runtime's built entry, or a command of its own (a compiled single executable). */
export type Entry = RuntimeName | readonly string[];

/**
 * Never anything off this machine: Deno checks for a newer release and Bun may upload a crash
 * report unless told not to.
 */
export const QUIET_RUNTIME_ENV = { DENO_NO_UPDATE_CHECK: "1", DENO_NO_PROMPT: "1", DO_NOT_TRACK: "1" };

export const HOST = "127.0.0.1";

export interface EntryProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  readonly exited: Promise<number | string | null>;
  /**
   * Resolves once the process has exited and its stdout and stderr are read to their end: what it
   * wrote last (a V8 trace flushed at exit, say) may still be in the pipe when `exited` resolves.
   */
  readonly closed: Promise<void>;
}

export interface ServiceProcess extends EntryProcess {
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
}

const children = new Set<ChildProcess>();

/** Kills what this file spawned and is still running (registered as afterEach/afterAll by `killSpawnedAfterEach`). */
export function killSpawned(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    children.delete(child);
  }
}

/** Registers killSpawned after each test and after all; call once at a test file's top level. */
export function killSpawnedAfterEach(): void {
  afterEach(killSpawned);
  afterAll(killSpawned);
}

/**
 * The first of `count` consecutive free loopback ports, for a process that listens on them a
 * moment later. Taken below the kernel's ephemeral range (Linux: 32768-60999), not from port 0:
 * while the test run makes its many loopback connections, a port from that range can become the
 * local port of one of them before the process listens, which then fails with EADDRINUSE (the
 * likely cause of a `system up` test that failed once, its last agent listening seconds after).
 */
export async function freePort(count = 1): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = 20_000 + Math.floor(Math.random() * (12_000 - count));
    let free = true;
    for (let k = 0; free && k < count; k++) free = await isFree(port + k);
    if (free) return port;
  }
  throw new Error(`no ${count} free loopback ports in a row below 32000`);
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/**
 * The npm script's command for a runtime (scripts/lib/entry-scripts.mjs), else the command given;
 * its repository paths made absolute, so it also runs from another working directory.
 */
const commandOf = (entry: Entry) => {
  if (typeof entry !== "string") return { command: [...entry], env: {} };
  const root = process.cwd();
  const { command, args, env } = scriptCommand(root, ENTRY_SCRIPTS[entry]);
  return { command: [command, ...args.map((a) => (a.startsWith("dist/") ? join(root, a) : a))], env };
};
const labelOf = (entry: Entry) => (typeof entry === "string" ? entry : entry.join(" "));

/**
 * Spawns the runtime's built entry with `env` (PATH and HOME added, nothing else inherited); `as`
 * runs it as another user (a test running as root, to meet a file it may not read).
 */
export function spawnEntry(entry: Entry, env: Record<string, string>, cwd = process.cwd(), as?: { uid: number; gid: number }): EntryProcess {
  const { command: [command, ...args], env: scriptEnv } = commandOf(entry);
  const child = spawn(command!, args, {
    cwd,
    ...as,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...QUIET_RUNTIME_ENV, ...scriptEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (err += s));
  const exited = new Promise<number | string | null>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return { child, stdout: () => out, stderr: () => err, exited, closed };
}

/** Spawns the entry on a free loopback port (no env file unless `env` names one) and waits for its "listening" line. */
export async function startEntry(entry: Entry, env: Record<string, string>, { ms = 15_000, cwd = process.cwd() } = {}): Promise<ServiceProcess> {
  const runtime = labelOf(entry);
  const port = await freePort();
  const svc = spawnEntry(entry, { HOST, PORT: String(port), ENV_FILE: "/nonexistent/.env", ...env }, cwd);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${runtime}: no "listening" line in ${ms} ms\nstdout:\n${svc.stdout()}\nstderr:\n${svc.stderr()}`)), ms);
    const check = () => {
      if (/listening/.test(svc.stdout())) {
        clearTimeout(timer);
        svc.child.stdout!.off("data", check);
        resolve();
      }
    };
    svc.child.stdout!.on("data", check);
    void svc.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${runtime}: exited (${code}) before listening\nstdout:\n${svc.stdout()}\nstderr:\n${svc.stderr()}`));
    });
    check();
  });
  return { ...svc, base: `http://${HOST}:${port}` };
}

/** SIGTERM, then the exit code (SIGKILL after `ms`). */
export async function stopEntry(svc: EntryProcess, ms = 10_000): Promise<number | string | null> {
  if (svc.child.exitCode !== null || svc.child.signalCode !== null) return svc.exited;
  svc.child.kill("SIGTERM");
  const timer = setTimeout(() => svc.child.kill("SIGKILL"), ms);
  try {
    return await svc.exited;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A start function for the smoke suite (test/runtime/smoke.ts): the entry (or the one a function
 * makes first) with the suite's environment and `extra` on top; stopping it sends SIGTERM and
 * expects the drain's exit 0.
 */
export function entryStarter(entry: Entry | (() => Promise<Entry>), extra: () => Record<string, string> = () => ({})) {
  return async ({ env }: { env: Readonly<Record<string, string>> }) => {
    const resolved = typeof entry === "function" ? await entry() : entry;
    const runtime = labelOf(resolved);
    const svc = await startEntry(resolved, { ...env, ...extra() });
    return {
      base: svc.base,
      async stop() {
        const code = await stopEntry(svc);
        if (code !== 0) throw new Error(`${runtime}: exited ${String(code)} after SIGTERM\nstderr:\n${svc.stderr()}`);
      },
    };
  };
}
