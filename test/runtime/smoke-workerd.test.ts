/**
 * The smoke suite (smoke.ts) on workerd in Miniflare, served on loopback: the worker entry with the
 * example tools bundled in (test/support/smoke-worker.ts) and the API policy as the API_POLICY
 * binding. Two stores: the Durable Objects of wrangler.toml, and PostgreSQL on loopback through a
 * Hyperdrive binding (Miniflare connects it straight to the database; a database of its own, as
 * no search_path reaches the worker: freshDatabase in test/support/postgres.ts).
 */
import { resolve } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase } from "../support/postgres.js";
import { bundleWorker, hyperdriveTo, startWorkerd } from "../support/workerd.js";
import { describeSmoke, type SmokeSetup } from "./smoke.js";

async function startSmokeWorker(setup: SmokeSetup, options: Parameters<typeof startWorkerd>[1] = {}) {
  const script = await bundleWorker("test/support/smoke-worker.ts", { "agent-service": resolve("src/index.ts") });
  // No files on workerd: the tools are in the bundle and the policy comes as text.
  const { TOOLS_MODULE: _tools, API_POLICY_PATH: _policy, ...vars } = setup.env;
  const mf = await startWorkerd(script, { bindings: { ...vars, API_POLICY: setup.policyText }, host: "127.0.0.1", port: 0, ...options });
  const url = await mf.ready;
  return { base: url.origin, stop: () => mf.dispose() };
}

describeSmoke("workerd, durable objects", (setup) => startSmokeWorker(setup));

let database: Awaited<ReturnType<typeof freshDatabase>>;
beforeAll(async () => {
  database = await freshDatabase("smoke_workerd");
});
afterAll(() => database?.drop());

describeSmoke("workerd, postgres", (setup) => startSmokeWorker(setup, hyperdriveTo(database.dsn)));

describe("workerd, postgres: the rows", () => {
  it("are in the database (the smoke column above ran on PostgreSQL, not the Durable Objects), and no request left a connection behind", async () => {
    const sql = postgres(database.dsn.toString(), { max: 1, onnotice: () => {} });
    try {
      const [threads] = await sql`SELECT count(*)::int AS n FROM threads`;
      const [approvals] = await sql`SELECT count(*)::int AS n FROM approvals WHERE status = 'approved'`;
      expect(threads!.n).toBeGreaterThanOrEqual(4);
      expect(approvals!.n).toBe(1);
      // The worker has stopped: a connection still open would be a request's work cut off mid-query.
      expect(await sql`SELECT state, query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).toEqual([]);
    } finally {
      await sql.end();
    }
  });
});
