/// <reference types="node" />
/**
 * The Postgres adapters, loaded lazily by createApp when CHECKPOINTER=sql: openPostgres keeps one
 * pool for the process (Node, Bun, Deno). The workerd entry builds the same adapters over a pool
 * per request instead (src/runtime/workerd/postgres.ts: workerd lets no request use another's
 * sockets), with postgresAdapters.
 */
import type { Logger } from "../../observability/logger.js";
import type { Store, ThreadLease } from "../ports.js";
import { connect, migrate, type Sql, warm } from "./connect.js";
import { createGuard, type Guard } from "./health.js";
import { createPostgresLease, markLostRuns } from "./lease.js";
import { createPostgresStore } from "./store.js";

export interface PostgresAdapters {
  readonly store: Store;
  readonly lease: ThreadLease;
}

export async function openPostgres(options: {
  dsn: string;
  min: number;
  max: number;
  schema?: string | undefined;
  logger: Logger;
  onHealth: (up: boolean) => void;
}): Promise<PostgresAdapters> {
  const sql = connect({ ...options, ...(options.schema ? { schema: options.schema } : {}) });
  const health = createGuard(options.logger, options.onHealth);
  // The schema is made on first contact, so a database that is down at startup only delays it:
  // requests answer 503 meanwhile, and the service recovers without a restart.
  let migrated: Promise<void> | undefined;
  const guard: Guard = (work) =>
    health(async () => {
      migrated ??= migrate(sql, options.schema).catch((error: unknown) => {
        migrated = undefined;
        throw error;
      });
      await migrated;
      return work();
    });
  // Down at startup: the guard has logged it once; requests answer 503 until it answers.
  await guard(() => warm(sql, Math.min(options.min, options.max))).catch(() => {});
  return postgresAdapters(sql, guard, options.logger);
}

/** The store and the lease over one pool, every query through `guard` (health, and the schema made first). */
export function postgresAdapters(sql: Sql, guard: Guard, logger: Logger): PostgresAdapters {
  return {
    store: { ...createPostgresStore(sql, guard, logger), markLostRuns: (graceMs: number) => markLostRuns(sql, guard, graceMs) },
    lease: createPostgresLease(sql, guard),
  };
}
