/**
 * The runs table on PostgreSQL, with the steps of a run's life that span tables: claimThread
 * (thread, lease, run record and first messages in one statement) and finishRun (last messages,
 * final record and the lease's release in one), each batched across chats under load
 * (batch.ts); and threadBlockers.
 */
import { LeaseLost } from "../../errors.js";
import type { Logger } from "../../observability/logger.js";
import type { Claimed, LeaseHandle, Message, RunEnd, RunStart, RunStore, ThreadRow } from "../ports.js";
import { batcher } from "./batch.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { approvalOf, jsonb, runOf, threadOf, type Row } from "./rows.js";

/** A paused run every approval of which is decided and that no run resumed yet (alias r). */
const DUE = `r.status = 'awaiting_approval' AND r.resumed_by IS NULL
  AND EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.run_id)
  AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.run_id AND a.status = 'pending')`;

interface Claim {
  readonly row: ThreadRow;
  readonly holder: string;
  readonly ttlMs: number;
  readonly start: RunStart | undefined;
}

interface Finish {
  readonly runId: string;
  readonly end: RunEnd;
  readonly append: { readonly messages: readonly Message[]; readonly at: string };
  readonly lease: LeaseHandle;
}

function claimedOf(r: Row, holder: string): Claimed {
  const generation = r.generation as string | number | null | undefined;
  const lease = generation === null || generation === undefined ? null : { threadId: r.thread_id as string, holder, generation: Number(generation) };
  return { created: Boolean(r.created), row: threadOf(r), lease, started: Boolean(r.started) };
}

/** A run record's columns, named (columns a later version adds keep their defaults), and typed. */
const RUN_FIELDS =
  "run_id, thread_id, status, error_type, error_id, principal_hash, actor, metadata, usage, created_at, updated_at, ended_at, latency_ms, resumed_from, resumed_by";
const RUN_RECORD =
  "run_id text, thread_id text, status text, error_type text, error_id text, principal_hash text, actor text, metadata jsonb, usage jsonb, " +
  "created_at timestamptz, updated_at timestamptz, ended_at timestamptz, latency_ms integer, resumed_from text, resumed_by text";

const RUN_COLUMNS: Record<string, string> = {
  status: "status",
  error_type: "error_type",
  error_id: "error_id",
  principal_hash: "principal_hash",
  actor: "actor",
  metadata: "metadata",
  usage: "usage",
  created_at: "created_at",
  updated_at: "updated_at",
  ended_at: "ended_at",
  latency_ms: "latency_ms",
  resumed_from: "resumed_from",
  resumed_by: "resumed_by",
};

export function createRunStore(sql: Sql, guard: Guard, logger: Logger): Omit<RunStore, "markLostRuns"> {
  const json = jsonb(sql);
  const batching = (kind: string) => ({
    inFlight: 2,
    max: 64,
    // The guard's deadline once the database is known down (3 s while it is up).
    maxWaitMs: 2_000,
    onBatch: (size: number) => logger.debug("batched write", { kind, size }),
    onFallback: (size: number, error: unknown) =>
      logger.warning("batched write failed, retried one by one", { kind, size, error_code: String((error as { code?: unknown }).code ?? "none") }),
  });

  /**
   * Releases the leases of `pairs` (thread_id, generation) where they still hold, answering
   * (thread_id, generation, held) per pair: an upsert, so each row is found through the lease's
   * unique index whatever the planner thinks of the table. A pair whose row is gone (its thread
   * was deleted) leaves an expired row behind, which the thread id reuses if it ever comes back.
   */
  const release = (pairs: ReturnType<Sql>) => sql`
    INSERT INTO leases (thread_id, holder, generation, expires_at)
    SELECT p.thread_id, '', p.generation, '-infinity' FROM (${pairs}) AS p(thread_id, generation)
    ON CONFLICT (thread_id) DO UPDATE SET expires_at = '-infinity'
      WHERE leases.generation = excluded.generation AND leases.expires_at > now()
    RETURNING thread_id, generation, (xmax <> 0) AS held`;

  // A chat's two writes, batched across chats under load (batch.ts); the single forms serve a
  // quiet service and the fallback.
  const claimOne = async ({ row, holder, ttlMs, start }: Claim): Promise<Claimed> => {
    const run = start?.run;
    // The run and its messages go in only where this statement made the thread and leased it.
    const [r] = await sql`
      WITH l AS (
        INSERT INTO leases (thread_id, holder, generation, expires_at)
        VALUES (${row.thread_id}, ${holder}, nextval('lease_generation'), now() + ${ttlMs} * interval '1 millisecond')
        ON CONFLICT (thread_id) DO UPDATE
          SET holder = excluded.holder, generation = excluded.generation, expires_at = excluded.expires_at
          WHERE leases.expires_at <= now()
        RETURNING generation
      ),
      t AS (
        INSERT INTO threads (thread_id, owner, actor, created_at, updated_at)
        SELECT ${row.thread_id}::text, ${row.owner}::text, ${row.actor}::text, ${row.created_at}::timestamptz, ${row.updated_at}::timestamptz
        WHERE (SELECT count(*) FROM l) >= 0
        ON CONFLICT (thread_id) DO UPDATE SET thread_id = excluded.thread_id
        RETURNING *, (xmax = 0) AS created
      ),
      go AS (SELECT 1 FROM t, l WHERE t.created AND ${run !== undefined}::boolean),
      run AS (
        INSERT INTO runs (${sql.unsafe(RUN_FIELDS)})
        SELECT r.* FROM jsonb_to_record(${json(run ?? {})}::jsonb) AS r(${sql.unsafe(RUN_RECORD)}) WHERE EXISTS (SELECT 1 FROM go)
      ),
      ins AS (
        INSERT INTO messages (thread_id, message)
        SELECT ${row.thread_id}, m FROM jsonb_array_elements(${json(start?.messages ?? [])}::jsonb) WITH ORDINALITY AS x(m, n)
        WHERE EXISTS (SELECT 1 FROM go) ORDER BY n
      )
      SELECT t.*, (SELECT generation FROM l) AS generation, EXISTS (SELECT 1 FROM go) AS started FROM t`;
    return claimedOf(r!, holder);
  };
  const claimMany = async (claims: readonly Claim[]): Promise<Claimed[]> => {
    const items = claims.map((c, i) => ({
      i, ...c.row, holder: c.holder, ttl_ms: c.ttlMs, start: c.start !== undefined, run: c.start?.run ?? null, messages: c.start?.messages ?? [],
    }));
    const rows = await sql`
      WITH x AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${json(items)}::jsonb) AS x(i int, thread_id text, owner text, actor text,
          created_at timestamptz, updated_at timestamptz, holder text, ttl_ms int, start boolean, run jsonb, messages jsonb)
      ),
      l AS (
        INSERT INTO leases (thread_id, holder, generation, expires_at)
        SELECT thread_id, holder, nextval('lease_generation'), now() + ttl_ms * interval '1 millisecond' FROM x ORDER BY i
        ON CONFLICT (thread_id) DO UPDATE
          SET holder = excluded.holder, generation = excluded.generation, expires_at = excluded.expires_at
          WHERE leases.expires_at <= now()
        RETURNING thread_id, generation
      ),
      t AS (
        INSERT INTO threads (thread_id, owner, actor, created_at, updated_at)
        SELECT thread_id, owner, actor, created_at, updated_at FROM x WHERE (SELECT count(*) FROM l) >= 0 ORDER BY i
        ON CONFLICT (thread_id) DO UPDATE SET thread_id = excluded.thread_id
        RETURNING *, (xmax = 0) AS created
      ),
      go AS MATERIALIZED (SELECT x.i, x.thread_id, x.run, x.messages FROM x JOIN t USING (thread_id) JOIN l USING (thread_id) WHERE t.created AND x.start),
      run AS (
        INSERT INTO runs (${sql.unsafe(RUN_FIELDS)})
        SELECT r.* FROM go CROSS JOIN LATERAL jsonb_to_record(go.run) AS r(${sql.unsafe(RUN_RECORD)}) ORDER BY go.i
      ),
      ins AS (
        INSERT INTO messages (thread_id, message)
        SELECT go.thread_id, e.m FROM go CROSS JOIN LATERAL jsonb_array_elements(go.messages) WITH ORDINALITY AS e(m, n) ORDER BY go.i, e.n
      )
      SELECT x.i, t.*, l.generation, (go.i IS NOT NULL) AS started
      FROM x JOIN t USING (thread_id) LEFT JOIN l USING (thread_id) LEFT JOIN go USING (i)
      ORDER BY x.i`;
    return rows.map((r) => claimedOf(r, claims[r.i as number]!.holder));
  };
  const claim = batcher<Claim, Claimed>({ one: claimOne, many: claimMany, key: (c) => c.row.thread_id, ...batching("claim") });

  const finishOne = async ({ runId, end, append, lease }: Finish): Promise<boolean> => {
    const [r] = await sql`
      WITH rel AS (${release(sql`VALUES (${lease.threadId}::text, ${lease.generation}::bigint)`)}),
      fence AS (SELECT 1 FROM rel WHERE held),
      ins AS (
        INSERT INTO messages (thread_id, message)
        SELECT ${lease.threadId}, m FROM jsonb_array_elements(${json(append.messages)}) WITH ORDINALITY AS t(m, n)
        WHERE EXISTS (SELECT 1 FROM fence) ORDER BY n
      ),
      upd AS (UPDATE threads SET updated_at = ${append.at} WHERE thread_id = ${lease.threadId} AND EXISTS (SELECT 1 FROM fence)),
      run AS (
        UPDATE runs SET status = ${end.status}, error_type = ${end.error_type}, error_id = ${end.error_id}, usage = ${json(end.usage)},
          updated_at = ${end.updated_at}, ended_at = ${end.ended_at}, latency_ms = ${end.latency_ms}
        WHERE run_id = ${runId} AND EXISTS (SELECT 1 FROM fence)
      )
      SELECT EXISTS (SELECT 1 FROM fence) AS held`;
    return Boolean(r!.held);
  };
  const finishMany = async (finishes: readonly Finish[]): Promise<boolean[]> => {
    const items = finishes.map((f, i) => ({
      i, run_id: f.runId, thread_id: f.lease.threadId, generation: f.lease.generation, ...f.end, at: f.append.at, messages: f.append.messages,
    }));
    const rows = await sql`
      WITH x AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${json(items)}::jsonb) AS x(i int, run_id text, thread_id text, generation bigint,
          status text, error_type text, error_id text, usage jsonb, updated_at timestamptz, ended_at timestamptz, latency_ms int,
          at timestamptz, messages jsonb)
      ),
      rel AS (${release(sql`SELECT thread_id, generation FROM x ORDER BY i`)}),
      -- Joined on the whole pair, the planner expects few rows here: the updates below then look
      -- each row up by its key however small (or unanalyzed) the tables were when it planned.
      ok AS MATERIALIZED (SELECT x.* FROM x JOIN rel ON rel.thread_id = x.thread_id AND rel.generation = x.generation WHERE rel.held),
      ins AS (
        INSERT INTO messages (thread_id, message)
        SELECT ok.thread_id, e.m FROM ok CROSS JOIN LATERAL jsonb_array_elements(ok.messages) WITH ORDINALITY AS e(m, n) ORDER BY ok.i, e.n
      ),
      upd AS (UPDATE threads t SET updated_at = ok.at FROM ok WHERE t.thread_id = ok.thread_id),
      run AS (
        UPDATE runs r SET status = ok.status, error_type = ok.error_type, error_id = ok.error_id, usage = ok.usage,
          updated_at = ok.updated_at, ended_at = ok.ended_at, latency_ms = ok.latency_ms
        FROM ok WHERE r.run_id = ok.run_id
      )
      SELECT i FROM ok`;
    const held = new Set(rows.map((r) => r.i as number));
    return finishes.map((_, i) => held.has(i));
  };
  const finish = batcher<Finish, boolean>({ one: finishOne, many: finishMany, key: (f) => f.lease.threadId, ...batching("finish") });

  return {
    claimThread: (row, lease, start) => guard(() => claim({ row, holder: lease.holder, ttlMs: lease.ttlMs, start })),
    createRun: (run, append) => guard(async () => {
      if (append && append.messages.length > 0) {
        // One round trip: the record, the messages and the thread's updated_at.
        const fenceGen = append.fence?.generation ?? null;
        const [r] = await sql`
          WITH fence AS (
            SELECT 1 WHERE ${fenceGen}::bigint IS NULL
            UNION ALL SELECT 1 FROM leases WHERE thread_id = ${run.thread_id} AND generation = ${fenceGen} AND expires_at > now()
          ),
          -- Fenced like the messages: a run whose lease moved on leaves no record behind either.
          run AS (
            INSERT INTO runs (run_id, thread_id, status, error_type, error_id, principal_hash, actor, metadata, usage,
                              created_at, updated_at, ended_at, latency_ms, resumed_from, resumed_by)
            SELECT ${run.run_id}, ${run.thread_id}, ${run.status}, ${run.error_type}, ${run.error_id}, ${run.principal_hash},
                    ${run.actor}, ${json(run.metadata)}, ${json(run.usage)}, ${run.created_at}::timestamptz, ${run.updated_at}::timestamptz,
                    ${run.ended_at}::timestamptz, ${run.latency_ms}::integer, ${run.resumed_from}, ${run.resumed_by}
            WHERE EXISTS (SELECT 1 FROM fence)
          ),
          ins AS (
            INSERT INTO messages (thread_id, message)
            SELECT ${run.thread_id}, m FROM jsonb_array_elements(${json(append.messages)}) WITH ORDINALITY AS t(m, n)
            WHERE EXISTS (SELECT 1 FROM fence) ORDER BY n RETURNING 1
          ),
          upd AS (UPDATE threads SET updated_at = ${append.at} WHERE thread_id = ${run.thread_id} AND EXISTS (SELECT 1 FROM fence))
          SELECT count(*)::int AS n FROM ins`;
        if (r!.n !== append.messages.length) throw new LeaseLost();
        return;
      }
      await sql`
        INSERT INTO runs (run_id, thread_id, status, error_type, error_id, principal_hash, actor, metadata, usage,
                          created_at, updated_at, ended_at, latency_ms, resumed_from, resumed_by)
        VALUES (${run.run_id}, ${run.thread_id}, ${run.status}, ${run.error_type}, ${run.error_id}, ${run.principal_hash},
                ${run.actor}, ${json(run.metadata)}, ${json(run.usage)}, ${run.created_at}, ${run.updated_at},
                ${run.ended_at}, ${run.latency_ms}, ${run.resumed_from}, ${run.resumed_by})`;
    }),
    finishRun: (runId, end, append, lease) => guard(async () => {
      if (!(await finish({ runId, end, append, lease }))) throw new LeaseLost();
    }),
    updateRun: (runId, patch) => guard(async () => {
      const values: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(patch)) {
        const column = RUN_COLUMNS[k];
        if (column && v !== undefined) values[column] = k === "metadata" || k === "usage" ? json(v) : v;
      }
      if (Object.keys(values).length === 0) return;
      await sql`UPDATE runs SET ${sql(values)} WHERE run_id = ${runId}`;
    }),
    getRun: (runId) => guard(async () => {
      const [r] = await sql`SELECT * FROM runs WHERE run_id = ${runId}`;
      return r ? runOf(r) : null;
    }),
    listRuns: (threadId) => guard(async () => {
      const rows = await sql`SELECT * FROM runs WHERE thread_id = ${threadId} ORDER BY created_at, run_id`;
      return rows.map(runOf);
    }),
    threadBlockers: (threadId) => guard(async () => {
      const rows = await sql`
        SELECT 'pending' AS kind, shown, internal, NULL::jsonb AS run FROM approvals
        WHERE thread_id = ${threadId} AND status = 'pending'
        UNION ALL
        SELECT 'due', NULL, NULL, to_jsonb(r) FROM runs r WHERE r.thread_id = ${threadId} AND ${sql.unsafe(DUE)}`;
      const pending = rows.filter((r) => r.kind === "pending").map(approvalOf);
      pending.sort((a, b) => (a.created_at === b.created_at ? (a.approval_id < b.approval_id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1));
      const due = rows.filter((r) => r.kind === "due").map((r) => runOf(r.run as Row));
      due.sort((a, b) => (a.created_at < b.created_at ? -1 : 1));
      return { pending, due: due[0] ?? null };
    }),
    dueRuns: (limit) => guard(async () => {
      const rows = await sql`SELECT * FROM runs r WHERE ${sql.unsafe(DUE)} ORDER BY r.created_at LIMIT ${limit}`;
      return rows.map(runOf);
    }),
    markResumed: (runId, by) => guard(async () => {
      const rows = await sql`UPDATE runs SET resumed_by = ${by} WHERE run_id = ${runId} AND resumed_by IS NULL RETURNING 1`;
      return rows.length > 0;
    }),
  };
}
