/**
 * A built runtime entry (dist/node.js, dist/bun.js, dist/deno.js) as a real process on loopback:
 * spawned with only the environment a test gives (plus PATH and HOME), ready once it printed its
 * "listening" line. `npm test` builds dist first; Bun and Deno are the dev dependencies' binaries.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterAll, afterEach } from "vitest";

export type RuntimeName = "node" | "bun" | "deno";

/** The command that runs each built entry, as `npm start`, `npm run start:bun` and `npm run start:deno` do. */
export const ENTRY_COMMANDS: Record<RuntimeName, readonly string[]> = {
  node: [process.execPath, "dist/node.js"],
  bun: ["node_modules/.bin/bun", "dist/bun.js"],
  deno: ["node_modules/.bin/deno", "run", "-A", "dist/deno.js"],
};

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

/** A free loopback port: listen on port 0, read the port, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Spawns the runtime's built entry with `env` (PATH and HOME added, nothing else inherited). */
export function spawnEntry(runtime: RuntimeName, env: Record<string, string>): EntryProcess {
  const [command, ...args] = ENTRY_COMMANDS[runtime];
  const child = spawn(command!, args, {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...QUIET_RUNTIME_ENV, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (err += s));
  const exited = new Promise<number | string | null>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Spawns the entry on a free loopback port (no env file) and waits for its "listening" line. */
export async function startEntry(runtime: RuntimeName, env: Record<string, string>, ms = 15_000): Promise<ServiceProcess> {
  const port = await freePort();
  const svc = spawnEntry(runtime, { HOST, PORT: String(port), ENV_FILE: "/nonexistent/.env", ...env });
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
 * A start function for the smoke suite (test/runtime/smoke.ts): the runtime's entry with the
 * suite's environment and `extra` on top; stopping it sends SIGTERM and expects the drain's exit 0.
 */
export function entryStarter(runtime: RuntimeName, extra: () => Record<string, string> = () => ({})) {
  return async ({ env }: { env: Readonly<Record<string, string>> }) => {
    const svc = await startEntry(runtime, { ...env, ...extra() });
    return {
      base: svc.base,
      async stop() {
        const code = await stopEntry(svc);
        if (code !== 0) throw new Error(`${runtime}: exited ${String(code)} after SIGTERM\nstderr:\n${svc.stderr()}`);
      },
    };
  };
}
