/**
 * What the kill -9 tests share (test/runtime/*-crash.test.ts): a scratch PostgreSQL schema per
 * suite, a recording upstream slow enough (10-60 ms) that a kill lands while a call is on the
 * wire, and replica processes of the built dist/ with the gated `orders` API, killed for good in
 * afterAll.
 */
import type { ChildProcess } from "node:child_process";
import { afterAll } from "vitest";
import { KEY } from "../helpers.js";
import { scratchDatabase, TEST_DSN } from "./postgres.js";
import { type ReplicaProcess, spawnReplica } from "./replica-process.js";
import { created, recordingUpstream } from "./upstream.js";

/** Lease timings of every replica: a dead one's thread is free after a second. */
export const LEASE = { renewMs: 200, ttlMs: 1_000 };

/** Call in a test file's top level: it registers the afterAll that kills and cleans up. */
export function crashReplicas() {
  const pg = scratchDatabase();
  const children = new Set<ChildProcess>();
  const upstream = recordingUpstream(async (res) => {
    await new Promise((r) => setTimeout(r, 10 + Math.random() * 50));
    created(res);
  });
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await pg.cleanup();
  });
  return {
    pg,
    upstream,
    /** Requests the upstream saw for the approval (its Idempotency-Key). */
    sentFor: (approvalId: string) => upstream.hits.filter((h) => h.headers["idempotency-key"] === approvalId).length,
    /** A replica process on `schema`, sweeping every 100 ms. */
    spawn: (schema: string): Promise<ReplicaProcess> =>
      spawnReplica(
        {
          SQLDB_DSN: TEST_DSN,
          TEST_SQL_SCHEMA: schema,
          TEST_LEASE_RENEW_MS: String(LEASE.renewMs),
          TEST_LEASE_TTL_MS: String(LEASE.ttlMs),
          TEST_API_KEY: KEY,
          TEST_ORDERS_URL: upstream.base,
          TEST_SWEEP_MS: "100",
        },
        children,
      ),
  };
}
