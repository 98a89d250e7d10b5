/**
 * Workers in workerd for tests (Miniflare): a test entry bundled the way tsup bundles
 * dist/worker.js (the same esbuild options and plugins, read from tsup.config.ts, into a
 * temporary folder: dist/ is tsup's), started with the Durable Objects of wrangler.toml. Also the
 * harness of the Durable Object adapters (./durable-harness.ts) and `remote`, a port whose every
 * method runs inside it.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { build, type BuildOptions, type Plugin } from "esbuild";
import { Miniflare, type MiniflareOptions } from "miniflare";

/** Keep in step with wrangler.toml (and the installed workerd). */
export const COMPATIBILITY_DATE = "2026-04-01";
/** wrangler.toml's flags: nodejs_compat for PostgreSQL on workerd (src/runtime/workerd/postgres.ts). */
export const COMPATIBILITY_FLAGS = ["nodejs_compat"];

/** The Durable Object bindings of wrangler.toml, for a worker whose script exports the classes. */
export const DURABLE_OBJECTS = {
  AGENT_STORE: { className: "AgentStoreObject", useSQLite: true },
  THREAD_LEASES: { className: "ThreadLeaseObject", useSQLite: true },
} as const;

interface WorkerBuild {
  esbuildPlugins?: Plugin[];
  esbuildOptions?: (options: BuildOptions) => void;
}

/** Bundles `entry` (a path from the repository root) as tsup bundles the worker; returns the file. */
export async function bundleWorker(entry: string, alias: Record<string, string> = {}): Promise<string> {
  // Loaded by URL, so tsc does not typecheck the build config with the tests.
  const tsupConfig = ((await import(new URL("../../tsup.config.ts", import.meta.url).href)) as { default: unknown }).default;
  const configs = (Array.isArray(tsupConfig) ? tsupConfig : [tsupConfig]) as (WorkerBuild & { entry?: Record<string, string> })[];
  const worker = configs.find((c) => c.entry && "worker" in c.entry)!;
  const options: BuildOptions = {
    entryPoints: [entry],
    outfile: join(mkdtempSync(join(tmpdir(), "worker-")), "worker.js"),
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    mainFields: ["module", "main"],
    plugins: worker.esbuildPlugins ?? [],
    alias,
    logLevel: "silent",
  };
  worker.esbuildOptions?.(options);
  await build(options);
  return options.outfile!;
}

/**
 * A worker script in workerd with the Durable Objects; `options` adds bindings, a port, more
 * workers. The worker's log lines (its stdout) are dropped; what workerd itself reports (stderr) shows.
 */
export async function startWorkerd(scriptPath: string, options: Partial<MiniflareOptions> = {}): Promise<Miniflare> {
  const mf = new Miniflare({
    modules: true,
    scriptPath,
    modulesRoot: dirname(scriptPath),
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: COMPATIBILITY_FLAGS,
    durableObjects: DURABLE_OBJECTS,
    handleRuntimeStdio(stdout: NodeJS.ReadableStream, stderr: NodeJS.ReadableStream) {
      stdout.resume();
      stderr.pipe(process.stderr);
    },
    ...options,
  } as MiniflareOptions);
  await mf.ready;
  return mf;
}

/** Miniflare's option for a Hyperdrive binding HYPERDRIVE to `dsn` (it wants a password in the string; a server that trusts ignores it). */
export function hyperdriveTo(dsn: URL): Partial<MiniflareOptions> {
  const withPassword = new URL(dsn);
  withPassword.password ||= "unused";
  return { hyperdrives: { HYPERDRIVE: withPassword.toString() } } as Partial<MiniflareOptions>;
}

export async function startHarness(): Promise<Miniflare> {
  return startWorkerd(await bundleWorker("test/support/durable-harness.ts"));
}

/** An adapter port whose every method is called inside the harness worker. */
export function remote<T>(mf: Miniflare, port: "lease" | "store" | "leaseObject" | "storeObject"): T {
  return new Proxy({} as Record<string, unknown>, {
    get(_, method) {
      // Not a method of the port: promises look for `then`, JSON.stringify for `toJSON`.
      if (typeof method !== "string" || method === "then" || method === "toJSON") return undefined;
      return async (...args: unknown[]) => {
        const res = await mf.dispatchFetch(`http://harness/${port}/${method}`, { method: "POST", body: JSON.stringify(args) });
        const body = (await res.json()) as { result?: unknown; error?: { code: string; message: string } };
        if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code });
        return body.result;
      };
    },
  }) as T;
}
