/**
 * The thread lease on PostgreSQL (spec 8): a row per thread, shared by every replica, timed by
 * the database's clock so replicas need not agree on theirs. Each acquisition draws a new
 * generation, which fenced writes carry. A release expires the row in place rather than deleting
 * it: a lease taken and released for every chat would otherwise leave a dead row per chat, and
 * every lookup would wade through them until the next vacuum. The row goes with its thread.
 */
import type { LeaseHandle, ThreadLease } from "../ports.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";

export function createPostgresLease(sql: Sql, guard: Guard): ThreadLease {
  return {
    acquire: (threadId, holder, ttlMs) => guard(async () => {
      const [r] = await sql`
        INSERT INTO leases (thread_id, holder, generation, expires_at)
        VALUES (${threadId}, ${holder}, nextval('lease_generation'), now() + ${ttlMs} * interval '1 millisecond')
        ON CONFLICT (thread_id) DO UPDATE
          SET holder = excluded.holder, generation = excluded.generation, expires_at = excluded.expires_at
          WHERE leases.expires_at <= now()
        RETURNING generation`;
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
