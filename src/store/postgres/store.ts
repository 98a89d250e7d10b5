/// <reference types="node" />
/**
 * The Store port on PostgreSQL, a file per table (threads.ts, runs.ts, approvals.ts, tasks.ts;
 * rows.ts maps rows and clears values of NUL). Every method is one round trip; writes a run makes
 * carry the lease generation and the database refuses them once the lease moved on (fencing), so a
 * replica that stalled and lost its lease cannot overwrite the new holder's state. Text is
 * stored with U+FFFD in place of U+0000 (PostgreSQL text cannot hold NUL).
 *
 * A statement that locks both a thread's lease row and its thread row takes the lease row first
 * (a CTE the thread's write waits on with `(SELECT count(*) FROM l) >= 0`), so two such
 * statements never wait on each other in a circle.
 *
 * Each statement is written once. Those that several writes share are fragments (sql`...`
 * composed into another statement), kept with their table: the lease acquisition, release and
 * fence (lease.ts), the thread insert and the fenced message insert (threads.ts), the run-record
 * insert (runs.ts).
 */
import type { Store } from "../ports.js";
import { createApprovalStore } from "./approvals.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { createRunStore } from "./runs.js";
import { createTaskStore } from "./tasks.js";
import { createThreadStore } from "./threads.js";
import type { Logger } from "../../observability/logger.js";

export function createPostgresStore(sql: Sql, guard: Guard, logger: Logger): Omit<Store, "markLostRuns"> {
  return {
    ...createThreadStore(sql, guard),
    ...createRunStore(sql, guard, logger),
    ...createApprovalStore(sql, guard),
    ...createTaskStore(sql, guard),
    ping: () => guard(async () => {
      await sql`SELECT 1`;
    }),
    close: async () => {
      await sql.end({ timeout: 5 });
    },
  };
}
