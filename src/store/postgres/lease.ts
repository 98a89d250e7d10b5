/**
 * The thread lease on PostgreSQL (spec 8): a row per thread, shared by every replica, timed by
 * the database's clock so replicas need not agree on theirs. Each acquisition draws a new
 * generation, which fenced writes carry. A release expires the row in place rather than deleting
 * it: a lease taken and released for every chat would otherwise leave a dead row per chat, and
 * every lookup would wade through them until the next vacuum. The row goes with its thread.
 */
import type { LeaseHandle, ThreadLease } from "../ports.js";
import type { Fragment, Sql } from "./connect.js";
import type { Guard } from "./health.js";

export function createPostgresLease(sql: Sql, guard: Guard): ThreadLease {
  return {
    acquire: (threadId, holder, ttlMs) => guard(async () => {
      const [r] = await takeLease(sql, threadId, holder, ttlMs);
      return r ? { threadId, holder, generation: Number(r.generation) } : null;
    }),
    renew: (handle: LeaseHandle, ttlMs) => guard(async () => {
      const rows = await sql`
        UPDATE leases SET expires_at = now() + ${ttlMs} * interval '1 millisecond'
        WHERE thread_id = ${handle.threadId} AND generation = ${handle.generation} AND expires_at > now()
        RETURNING 1`;
      return rows.length > 0;
    }),
    release: (handle) => guard(async () => {
      await sql`UPDATE leases SET expires_at = '-infinity' WHERE thread_id = ${handle.threadId} AND generation = ${handle.generation}`;
    }),
    isHeld: (threadId) => guard(async () => {
      const rows = await sql`SELECT 1 FROM leases WHERE thread_id = ${threadId} AND expires_at > now()`;
      return rows.length > 0;
    }),
  };
}

/**
 * The lease acquisition, written once: acquire here, and claimThread (postgres/runs.ts) in the
 * statement that makes the thread. `rows` selects (i, thread_id, holder, ttl_ms); each row takes
 * its thread unless another holder has an unexpired lease there, in `i` order (the lock order of
 * a batch), and each taken lease answers (thread_id, generation), a new generation every time.
 */
export const takeLeases = (sql: Sql, rows: Fragment): Fragment => sql`
  INSERT INTO leases (thread_id, holder, generation, expires_at)
  SELECT c.thread_id, c.holder, nextval('lease_generation'), now() + c.ttl_ms * interval '1 millisecond'
  FROM (${rows}) AS c(i, thread_id, holder, ttl_ms) ORDER BY c.i
  ON CONFLICT (thread_id) DO UPDATE
    SET holder = excluded.holder, generation = excluded.generation, expires_at = excluded.expires_at
    WHERE leases.expires_at <= now()
  RETURNING thread_id, generation`;

/** takeLeases for one thread. */
export const takeLease = (sql: Sql, threadId: string, holder: string, ttlMs: number): Fragment =>
  takeLeases(sql, sql`VALUES (0, ${threadId}::text, ${holder}::text, ${ttlMs}::float8)`);

/**
 * Releases the leases of `pairs` (thread_id, generation) where they still hold, answering
 * (thread_id, generation, held) per pair: an upsert, so each row is found through the lease's
 * unique index whatever the planner thinks of the table. A pair whose row is gone (its thread
 * was deleted) leaves an expired row behind, which the thread id reuses if it ever comes back.
 */
export const releaseLeases = (sql: Sql, pairs: Fragment): Fragment => sql`
  INSERT INTO leases (thread_id, holder, generation, expires_at)
  SELECT p.thread_id, '', p.generation, '-infinity' FROM (${pairs}) AS p(thread_id, generation)
  ON CONFLICT (thread_id) DO UPDATE SET expires_at = '-infinity'
    WHERE leases.generation = excluded.generation AND leases.expires_at > now()
  RETURNING thread_id, generation, (xmax <> 0) AS held`;

/**
 * The fence of a write: a row while the lease of `generation` still holds the thread; with no
 * generation (a write the caller does not fence), a row always.
 */
export const fenceOn = (sql: Sql, threadId: string, generation: number | null): Fragment => sql`
  SELECT 1 WHERE ${generation}::bigint IS NULL
  UNION ALL SELECT 1 FROM leases WHERE thread_id = ${threadId} AND generation = ${generation} AND expires_at > now()`;

/**
 * Run records left `running` by a dead process: marked `interrupted` with error type
 * `ProcessLost` once their thread's lease has been expired for `graceMs` (spec 3.1).
 */
export async function markLostRuns(sql: Sql, guard: Guard, graceMs: number): Promise<number> {
  return guard(async () => {
    // Tasks whose run died with its process fail with it (spec 3.3).
    const rows = await sql`
      WITH lost AS (
      UPDATE runs r SET status = 'interrupted', error_type = 'ProcessLost', updated_at = now(), ended_at = now()
      WHERE r.status = 'running'
        AND r.created_at < now() - ${graceMs} * interval '1 millisecond'
        AND NOT EXISTS (
          SELECT 1 FROM leases l WHERE l.thread_id = r.thread_id AND l.expires_at > now() - ${graceMs} * interval '1 millisecond'
        )
      RETURNING r.run_id
      ),
      failed AS (
        UPDATE a2a_tasks SET state = 'failed', updated_at = now(),
          status_parts = '[{"kind":"text","text":"The process running the task ended."},{"kind":"data","data":{"type":"error","code":"run_failed"}}]'
        WHERE state = 'working' AND run_id IN (SELECT run_id FROM lost)
      )
      SELECT count(*)::int AS n FROM lost`;
    return rows[0]!.n as number;
  });
}
