/**
 * Builds ./durable-harness.ts into a module worker (esbuild, into a temporary folder: not dist/,
 * which tsup owns) and starts it in Miniflare with the store and lease Durable Objects on SQLite,
 * as wrangler.toml declares them. `remote(mf, "lease")` is a ThreadLease (or Store) whose methods
 * run inside workerd.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { Miniflare } from "miniflare";

/** Keep in step with wrangler.toml (and the installed workerd). */
export const COMPATIBILITY_DATE = "2026-04-01";

/** The Durable Object bindings of wrangler.toml, for a Miniflare worker whose script exports the classes. */
export const DURABLE_OBJECTS = {
  AGENT_STORE: { className: "AgentStoreObject", useSQLite: true },
  THREAD_LEASES: { className: "ThreadLeaseObject", useSQLite: true },
} as const;

export async function buildHarness(): Promise<string> {
  const outfile = join(mkdtempSync(join(tmpdir(), "durable-harness-")), "harness.js");
  await build({
    entryPoints: ["test/support/durable-harness.ts"],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["cloudflare:*"],
    mainFields: ["module", "main"],
    conditions: ["workerd", "worker", "browser", "import", "default"],
    logLevel: "silent",
  });
  return outfile;
}

export async function startHarness(): Promise<Miniflare> {
  const scriptPath = await buildHarness();
  const mf = new Miniflare({ modules: true, scriptPath, modulesRoot: dirname(scriptPath), compatibilityDate: COMPATIBILITY_DATE, durableObjects: DURABLE_OBJECTS });
  await mf.ready;
  return mf;
}

/** An adapter port whose every method is called inside the harness worker. */
export function remote<T>(mf: Miniflare, port: "lease" | "store"): T {
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
