/// <reference types="node" />
/**
 * The Store port on PostgreSQL. Every method is one round trip; writes a run makes carry the
 * lease generation and the database refuses them once the lease moved on (fencing), so a
 * replica that stalled and lost its lease cannot overwrite the new holder's state. Text is
 * stored with U+FFFD in place of U+0000 (PostgreSQL text cannot hold NUL).
 *
 * A statement that locks both a thread's lease row and its thread row takes the lease row first
 * (a CTE the thread's write waits on with `(SELECT count(*) FROM l) >= 0`), so two such
 * statements never wait on each other in a circle.
 */
import type { TaskRecord } from "../records/task.js";
import type { ApprovalDecision, ApprovalRecord, ListApprovalsQuery } from "../records/approval.js";
import { LeaseLost } from "../../errors.js";
import type { Claimed, LeaseHandle, ListThreadsQuery, Message, RunEnd, RunRecord, RunStart, Store, ThreadRow } from "../ports.js";
import { batcher } from "./batch.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";
import type { Logger } from "../../observability/logger.js";

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString().replace("Z", "+00:00"));

/** U+0000 cannot be stored in text or jsonb: replaced by U+FFFD everywhere in a value. */
export function withoutNul<T>(value: T): T {
  if (typeof value === "string") return (value.includes("\u0000") ? value.replace(/\u0000/g, "\ufffd") : value) as T;
  if (Array.isArray(value)) return value.map(withoutNul) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[withoutNul(k)] = withoutNul(v);
    return out as T;
  }
  return value;
}

/** Whether a value holds U+0000 anywhere (a walk without copies: withoutNul copies). */
export function hasNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(hasNul);
  if (value && typeof value === "object") {
    for (const k in value) if (k.includes("\u0000") || hasNul((value as Record<string, unknown>)[k])) return true;
  }
  return false;
}

type Row = Record<string, unknown>;

function threadOf(r: Row): ThreadRow {
  return { thread_id: r.thread_id as string, owner: r.owner as string, actor: (r.actor as string | null) ?? null, created_at: iso(r.created_at as Date)!, updated_at: iso(r.updated_at as Date)! };
}

function runOf(r: Row): RunRecord {
  return {
    run_id: r.run_id as string,
    thread_id: r.thread_id as string,
    status: r.status as RunRecord["status"],
    error_type: (r.error_type as string | null) ?? null,
    error_id: (r.error_id as string | null) ?? null,
    principal_hash: r.principal_hash as string,
    actor: (r.actor as string | null) ?? null,
    metadata: (r.metadata as RunRecord["metadata"]) ?? {},
    usage: (r.usage as RunRecord["usage"]) ?? { input_tokens: 0, output_tokens: 0 },
    created_at: iso(r.created_at as Date)!,
    updated_at: iso(r.updated_at as Date)!,
    ended_at: iso((r.ended_at as Date | null) ?? null),
    latency_ms: (r.latency_ms as number | null) ?? null,
    resumed_from: (r.resumed_from as string | null) ?? null,
    resumed_by: (r.resumed_by as string | null) ?? null,
  };
}

function taskOf(r: Row): TaskRecord {
  return {
    task_id: r.task_id as string,
    context_id: r.context_id as string,
    owner: r.owner as string,
    actor: (r.actor as string | null) ?? null,
    state: r.state as TaskRecord["state"],
    status_parts: (r.status_parts as TaskRecord["status_parts"]) ?? [],
    artifacts: (r.artifacts as TaskRecord["artifacts"]) ?? [],
    approval_ids: (r.approval_ids as string[]) ?? [],
    run_id: (r.run_id as string | null) ?? null,
    instance_id: (r.instance_id as string | null) ?? null,
    created_at: iso(r.created_at as Date)!,
    updated_at: iso(r.updated_at as Date)!,
  };
}

function approvalOf(r: Row): ApprovalRecord {
  // Rows written before `outcome` existed read as null.
  const shown = r.shown as Omit<ApprovalRecord, "internal">;
  return { ...shown, outcome: shown.outcome ?? null, internal: r.internal as ApprovalRecord["internal"] };
}

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

export function createPostgresStore(sql: Sql, guard: Guard, logger: Logger): Omit<Store, "markLostRuns"> {
  const json = (v: unknown) => sql.json((hasNul(v) ? withoutNul(v) : v) as never);
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
    getThread: (id) => guard(async () => {
      const [r] = await sql`SELECT * FROM threads WHERE thread_id = ${id}`;
      return r ? threadOf(r) : null;
    }),
    createThread: (row) => guard(async () => {
      // DO UPDATE (a no-op) rather than DO NOTHING: it waits for a concurrent insert and returns
      // the stored row either way; xmax = 0 tells the caller that inserted it.
      const [r] = await sql`
        INSERT INTO threads (thread_id, owner, actor, created_at, updated_at)
        VALUES (${row.thread_id}, ${row.owner}, ${row.actor}, ${row.created_at}, ${row.updated_at})
        ON CONFLICT (thread_id) DO UPDATE SET thread_id = excluded.thread_id
        RETURNING *, (xmax = 0) AS created`;
      return { created: Boolean(r!.created), row: threadOf(r!) };
    }),
    // The lease port given is this store's own (its leases live in the same database).
    claimThread: (row, lease, start) => guard(() => claim({ row, holder: lease.holder, ttlMs: lease.ttlMs, start })),
    listThreads: (q: ListThreadsQuery) => guard(async () => {
      const rows = await sql`
        SELECT * FROM threads
        WHERE (${q.owner ?? null}::text IS NULL OR owner = ${q.owner ?? null})
          AND (${q.actor ?? null}::text IS NULL OR actor = ${q.actor ?? null})
        ORDER BY updated_at DESC, thread_id ASC LIMIT ${q.limit} OFFSET ${q.offset}`;
      return rows.map(threadOf);
    }),
    idleThreads: (before, limit) => guard(async () => {
      const rows = await sql`SELECT thread_id FROM threads WHERE updated_at < ${before} ORDER BY updated_at LIMIT ${limit}`;
      return rows.map((r) => r.thread_id as string);
    }),
    deleteThread: (id) => guard(async () => {
      const rows = await sql`
        WITH l AS (DELETE FROM leases WHERE thread_id = ${id} RETURNING 1)
        DELETE FROM threads WHERE thread_id = ${id} AND (SELECT count(*) FROM l) >= 0 RETURNING 1`;
      return rows.length > 0;
    }),
    getMessages: (id) => guard(async () => {
      const rows = await sql`SELECT message FROM messages WHERE thread_id = ${id} ORDER BY seq`;
      return rows.map((r) => r.message as Message);
    }),
    appendMessages: (id, messages, at, fence?: LeaseHandle) => guard(async () => {
      if (messages.length === 0) return;
      const batch = json(messages);
      const [r] = fence
        ? await sql`
          WITH fence AS (SELECT 1 FROM leases WHERE thread_id = ${id} AND generation = ${fence.generation} AND expires_at > now()),
          ins AS (
            INSERT INTO messages (thread_id, message)
            SELECT ${id}, m FROM jsonb_array_elements(${batch}) WITH ORDINALITY AS t(m, n)
            WHERE EXISTS (SELECT 1 FROM fence) ORDER BY n RETURNING 1
          ),
          upd AS (UPDATE threads SET updated_at = ${at} WHERE thread_id = ${id} AND EXISTS (SELECT 1 FROM fence))
          SELECT count(*)::int AS n FROM ins`
        : await sql`
          WITH ins AS (
            INSERT INTO messages (thread_id, message)
            SELECT ${id}, m FROM jsonb_array_elements(${batch}) WITH ORDINALITY AS t(m, n) ORDER BY n RETURNING 1
          ),
          upd AS (UPDATE threads SET updated_at = ${at} WHERE thread_id = ${id})
          SELECT count(*)::int AS n FROM ins`;
      if (fence && r!.n !== messages.length) throw new LeaseLost();
    }),
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
    createApproval: (a) => guard(async () => {
      const { internal, ...shown } = a;
      await sql`
        INSERT INTO approvals (approval_id, thread_id, run_id, status, requester, requester_actor, approvers, created_at, expires_at, shown, internal)
        VALUES (${a.approval_id}, ${a.thread_id}, ${a.run_id}, ${a.status}, ${a.requester}, ${a.requester_actor},
                ${sql.array([...a.approvers])}, ${a.created_at}, ${a.expires_at}, ${json(shown)}, ${json(internal)})`;
    }),
    getApproval: (id) => guard(async () => {
      const [r] = await sql`SELECT shown, internal FROM approvals WHERE approval_id = ${id}`;
      return r ? approvalOf(r) : null;
    }),
    listApprovals: (q: ListApprovalsQuery) => guard(async () => {
      const v = q.visibleTo;
      const roles = (v?.roles ?? []).map((r) => `role:${r}`);
      const rows = await sql`
        SELECT shown, internal FROM approvals
        WHERE (${q.thread_id ?? null}::text IS NULL OR thread_id = ${q.thread_id ?? null})
          AND (${q.run_id ?? null}::text IS NULL OR run_id = ${q.run_id ?? null})
          AND (${q.status ?? null}::text IS NULL OR status = ${q.status ?? null})
          AND (${v ? 1 : 0}::int = 0 OR requester = ${v?.requester ?? ""} OR approvers && ${sql.array(roles)}::text[])
        ORDER BY created_at DESC, approval_id DESC LIMIT ${q.limit} OFFSET ${q.offset}`;
      return rows.map(approvalOf);
    }),
    decideApproval: (id, d: ApprovalDecision) => guard(async () => {
      const patch = withoutNul({ status: d.status, decided_by: d.decided_by, decided_via: d.decided_via, decided_at: d.decided_at, comment: d.comment });
      const drop = d.dropCall ? { query: null, body: null } : {};
      const [r] = await sql`
        UPDATE approvals SET status = ${d.status},
          shown = shown || ${sql.json(patch as never)} || ${sql.json(drop as never)}
        WHERE approval_id = ${id} AND status = 'pending'
        RETURNING shown, internal`;
      return r ? approvalOf(r) : null;
    }),
    claimApprovalExecution: (id, at) => guard(async () => {
      const rows = await sql`
        UPDATE approvals SET internal = jsonb_set(internal, '{executed_at}', to_jsonb(${at}::text))
        WHERE approval_id = ${id} AND status = 'approved' AND internal->>'executed_at' IS NULL
        RETURNING 1`;
      return rows.length > 0;
    }),
    recordApprovalResult: (id, result) => guard(async () => {
      // The exact call is no longer needed once sent: keep only its answer.
      await sql`
        UPDATE approvals SET internal = internal || ${sql.json({ result: withoutNul(result), call: { query: [], body: null } } as never)},
          shown = shown || '{"outcome": "sent"}'
        WHERE approval_id = ${id}`;
    }),
    markOutcomeUnknown: (id) => guard(async () => {
      await sql`
        UPDATE approvals SET shown = shown || '{"outcome": "unknown"}'
        WHERE approval_id = ${id} AND coalesce(internal->'result', 'null'::jsonb) = 'null'::jsonb`;
    }),
    findApproval: (threadId, toolCallId, digest) => guard(async () => {
      const [r] = await sql`
        SELECT shown, internal FROM approvals
        WHERE thread_id = ${threadId} AND internal->>'tool_call_id' = ${toolCallId} AND shown->>'digest' = ${digest}
        LIMIT 1`;
      return r ? approvalOf(r) : null;
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
    dueApprovals: (now) => guard(async () => {
      const rows = await sql`SELECT shown, internal FROM approvals WHERE status = 'pending' AND expires_at <= ${now} ORDER BY expires_at LIMIT 500`;
      return rows.map(approvalOf);
    }),
    createTask: (t) => guard(async () => {
      await sql`
        INSERT INTO a2a_tasks (task_id, context_id, owner, actor, state, status_parts, artifacts, approval_ids, run_id, instance_id, created_at, updated_at)
        VALUES (${t.task_id}, ${t.context_id}, ${t.owner}, ${t.actor}, ${t.state}, ${json(t.status_parts)}, ${json(t.artifacts)},
                ${sql.array([...t.approval_ids])}, ${t.run_id}, ${t.instance_id}, ${t.created_at}, ${t.updated_at})`;
    }),
    getTask: (id) => guard(async () => {
      const [r] = await sql`SELECT * FROM a2a_tasks WHERE task_id = ${id}`;
      return r ? taskOf(r) : null;
    }),
    updateTask: (id, patch) => guard(async () => {
      const values: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(patch)) {
        if (v === undefined) continue;
        values[k] = k === "status_parts" || k === "artifacts" ? json(v) : k === "approval_ids" ? sql.array([...(v as string[])]) : v;
      }
      if (Object.keys(values).length > 0) await sql`UPDATE a2a_tasks SET ${sql(values)} WHERE task_id = ${id}`;
    }),
    listTasks: (q) => guard(async () => {
      const rows = await sql`
        SELECT * FROM a2a_tasks WHERE owner = ${q.owner}
          AND (${q.actor ?? null}::text IS NULL OR actor = ${q.actor ?? null})
          AND (${q.context_id ?? null}::text IS NULL OR context_id = ${q.context_id ?? null})
        ORDER BY updated_at DESC, task_id DESC LIMIT ${q.limit} OFFSET ${q.offset}`;
      return rows.map(taskOf);
    }),
    tasksWaitingOn: (threadId, approvalId) => guard(async () => {
      const rows = await sql`SELECT * FROM a2a_tasks WHERE context_id = ${threadId} AND state = 'input-required' AND ${approvalId} = ANY (approval_ids)`;
      return rows.map(taskOf);
    }),
    dropTasksBefore: (before) => guard(async () => {
      const rows = await sql`DELETE FROM a2a_tasks WHERE updated_at < ${before} RETURNING 1`;
      return rows.length;
    }),
    ping: () => guard(async () => {
      await sql`SELECT 1`;
    }),
    close: async () => {
      await sql.end({ timeout: 5 });
    },
  };
}
