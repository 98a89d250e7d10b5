/**
 * The runs table on PostgreSQL, with the steps of a run's life that span tables: claimThread
 * (thread, lease, run record and first messages in one statement) and finishRun (last messages,
 * final record and the lease's release in one), batched across chats under load, claims and
 * finishes together in one statement (batch.ts); and threadBlockers.
 */
import { LeaseLost } from "../../errors.js";
import type { Logger } from "../../observability/logger.js";
import type { Claimed, LeaseHandle, Message, RunEnd, RunStart, RunStore, ThreadRow } from "../ports.js";
import { batcher } from "./batch.js";
import type { Fragment, Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { fenceOn, releaseLeases, takeLease, takeLeases } from "./lease.js";
import { approvalOf, jsonb, runOf, threadOf, type Row } from "./rows.js";
import { appendFenced, insertMessages, insertThreads, threadMessages, threadRow } from "./threads.js";

/** A paused run with a decided approval that no run resumed yet (alias r). */
const DUE = `r.status = 'awaiting_approval' AND r.resumed_by IS NULL
  AND EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.run_id AND a.status <> 'pending')`;

interface Claim {
  readonly row: ThreadRow;
  readonly holder: string;
  readonly ttlMs: number;
  readonly start: RunStart | undefined;
}

/** A chat's two writes, which the batcher sends together under load (writeMany). */
type Write = { readonly claim: Claim } | { readonly finish: Finish };
type Written = Claimed | boolean;

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
  const batching = {
    // One write statement at the database at a time: on a disk where each commit waits for its
    // flush, chats that arrive meanwhile share the next commit, claims and finishes alike (sql
    // turns/s ~1,850 -> ~2,350 on this machine once both went in one statement; two at a time
    // measured no better); a quiet service still sends each write at once.
    inFlight: 1,
    max: 64,
    // The guard's deadline once the database is known down (3 s while it is up).
    maxWaitMs: 2_000,
    onBatch: (writes: readonly Write[]) => {
      const claims = writes.filter((w) => "claim" in w).length;
      logger.debug("batched write", { size: writes.length, claims, finishes: writes.length - claims });
    },
    onFallback: (size: number, error: unknown) =>
      logger.warning("batched write failed, retried one by one", { size, error_code: String((error as { code?: unknown }).code ?? "none") }),
  };

  /**
   * The run-record insert, written once (createRun, claimThread): `rows` selects (i, run), a run
   * record as jsonb, only the runs that may go in (the caller's fence or claim says which); they
   * go in `i` order, by name (columns a later version adds keep their defaults).
   */
  const insertRuns = (rows: Fragment) => sql`
    INSERT INTO runs (${sql.unsafe(RUN_FIELDS)})
    SELECT r.* FROM (${rows}) AS s(i, run) CROSS JOIN LATERAL jsonb_to_record(s.run) AS r(${sql.unsafe(RUN_RECORD)}) ORDER BY s.i`;

  // A chat's two writes, batched across chats under load (batch.ts); the single forms serve a
  // quiet service and the fallback.
  const claimOne = async ({ row, holder, ttlMs, start }: Claim): Promise<Claimed> => {
    const run = start?.run;
    // The run and its messages go in only where this statement made the thread and leased it.
    const [r] = await sql`
      WITH l AS (${takeLease(sql, row.thread_id, holder, ttlMs)}),
      t AS (${insertThreads(sql, threadRow(sql, row, sql`(SELECT count(*) FROM l) >= 0`))}),
      go AS (SELECT 1 FROM t, l WHERE t.created AND ${run !== undefined}::boolean),
      run AS (${insertRuns(sql`SELECT 0, ${json(run ?? {})}::jsonb WHERE EXISTS (SELECT 1 FROM go)`)}),
      ins AS (${insertMessages(sql, threadMessages(sql, row.thread_id, start?.messages ?? [], sql`go`))})
      SELECT t.*, (SELECT generation FROM l) AS generation, EXISTS (SELECT 1 FROM go) AS started FROM t`;
    return claimedOf(r!, holder);
  };
  const finishOne = async ({ runId, end, append, lease }: Finish): Promise<boolean> => {
    const [r] = await sql`
      WITH rel AS (${releaseLeases(sql, sql`VALUES (${lease.threadId}::text, ${lease.generation}::bigint)`)}),
      fence AS (SELECT 1 FROM rel WHERE held),
      ${appendFenced(sql, lease.threadId, append.messages, append.at)},
      run AS (
        UPDATE runs SET status = ${end.status}, error_type = ${end.error_type}, error_id = ${end.error_id}, usage = ${json(end.usage)},
          updated_at = ${end.updated_at}, ended_at = ${end.ended_at}, latency_ms = ${end.latency_ms}
        WHERE run_id = ${runId} AND EXISTS (SELECT 1 FROM fence)
      )
      SELECT EXISTS (SELECT 1 FROM fence) AS held`;
    return Boolean(r!.held);
  };

  /**
   * The CTEs of many claims (cx .. cins) and of many finishes (fx .. frun), written once: alone
   * (claimMany, finishMany) or together in one statement (writeMany), under distinct names.
   */
  const claimCtes = (claims: readonly Claim[]): Fragment => {
    const items = claims.map((c, i) => ({
      i, ...c.row, holder: c.holder, ttl_ms: c.ttlMs, start: c.start !== undefined, run: c.start?.run ?? null, messages: c.start?.messages ?? [],
    }));
    return sql`
      cx AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${json(items)}::jsonb) AS x(i int, thread_id text, owner text, actor text,
          created_at timestamptz, updated_at timestamptz, holder text, ttl_ms int, start boolean, run jsonb, messages jsonb)
      ),
      cl AS (${takeLeases(sql, sql`SELECT i, thread_id, holder, ttl_ms FROM cx`)}),
      ct AS (${insertThreads(sql, sql`SELECT i, thread_id, owner, actor, created_at, updated_at FROM cx WHERE (SELECT count(*) FROM cl) >= 0`)}),
      cgo AS MATERIALIZED (SELECT cx.i, cx.thread_id, cx.run, cx.messages FROM cx JOIN ct USING (thread_id) JOIN cl USING (thread_id) WHERE ct.created AND cx.start),
      crun AS (${insertRuns(sql`SELECT i, run FROM cgo`)}),
      cins AS (${insertMessages(sql, sql`SELECT i, thread_id, messages FROM cgo`)})`;
  };
  /** A row per claim: (i, the thread's columns, created, generation, started). */
  const CLAIMED = `SELECT cx.i, ct.thread_id, ct.owner, ct.actor, ct.created_at, ct.updated_at, ct.created, cl.generation, (cgo.i IS NOT NULL) AS started
      FROM cx JOIN ct USING (thread_id) LEFT JOIN cl USING (thread_id) LEFT JOIN cgo USING (i)`;

  const finishCtes = (finishes: readonly Finish[]): Fragment => {
    const items = finishes.map((f, i) => ({
      i, run_id: f.runId, thread_id: f.lease.threadId, generation: f.lease.generation, ...f.end, at: f.append.at, messages: f.append.messages,
    }));
    return sql`
      fx AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${json(items)}::jsonb) AS x(i int, run_id text, thread_id text, generation bigint,
          status text, error_type text, error_id text, usage jsonb, updated_at timestamptz, ended_at timestamptz, latency_ms int,
          at timestamptz, messages jsonb)
      ),
      frel AS (${releaseLeases(sql, sql`SELECT thread_id, generation FROM fx ORDER BY i`)}),
      -- Joined on the whole pair, the planner expects few rows here: the updates below then look
      -- each row up by its key however small (or unanalyzed) the tables were when it planned.
      fok AS MATERIALIZED (SELECT fx.* FROM fx JOIN frel ON frel.thread_id = fx.thread_id AND frel.generation = fx.generation WHERE frel.held),
      fins AS (${insertMessages(sql, sql`SELECT i, thread_id, messages FROM fok`)}),
      fupd AS (UPDATE threads t SET updated_at = fok.at FROM fok WHERE t.thread_id = fok.thread_id),
      frun AS (
        UPDATE runs r SET status = fok.status, error_type = fok.error_type, error_id = fok.error_id, usage = fok.usage,
          updated_at = fok.updated_at, ended_at = fok.ended_at, latency_ms = fok.latency_ms
        FROM fok WHERE r.run_id = fok.run_id
      )`;
  };

  const claimMany = async (claims: readonly Claim[]): Promise<Claimed[]> => {
    const rows = await sql`WITH ${claimCtes(claims)} ${sql.unsafe(CLAIMED)} ORDER BY cx.i`;
    return rows.map((r) => claimedOf(r, claims[r.i as number]!.holder));
  };
  const finishMany = async (finishes: readonly Finish[]): Promise<boolean[]> => {
    const rows = await sql`WITH ${finishCtes(finishes)} SELECT i FROM fok`;
    const held = new Set(rows.map((r) => r.i as number));
    return finishes.map((_, i) => held.has(i));
  };

  /**
   * Claims and finishes of different threads in one statement: one commit where two would each
   * wait for their own flush (the batcher keeps a thread's two writes apart, so no row is
   * touched twice). Both halves see one snapshot and commit together, or fail together.
   */
  const writeMany = async (claims: readonly Claim[], finishes: readonly Finish[]): Promise<{ claimed: Claimed[]; held: boolean[] }> => {
    const rows = await sql`
      WITH ${claimCtes(claims)}, ${finishCtes(finishes)}
      SELECT 'c' AS kind, * FROM (${sql.unsafe(CLAIMED)}) c
      UNION ALL
      SELECT 'f', i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM fok`;
    const claimed: Claimed[] = [];
    const held = new Set<number>();
    for (const r of rows) {
      if (r.kind === "c") claimed[r.i as number] = claimedOf(r, claims[r.i as number]!.holder);
      else held.add(r.i as number);
    }
    return { claimed, held: finishes.map((_, i) => held.has(i)) };
  };

  const one = (w: Write): Promise<Written> => ("claim" in w ? claimOne(w.claim) : finishOne(w.finish));
  const many = async (writes: readonly Write[]): Promise<Written[]> => {
    const claims: Claim[] = [];
    const finishes: Finish[] = [];
    for (const w of writes) {
      if ("claim" in w) claims.push(w.claim);
      else finishes.push(w.finish);
    }
    let claimed: Claimed[];
    let held: boolean[];
    if (finishes.length === 0) [claimed, held] = [await claimMany(claims), []];
    else if (claims.length === 0) [claimed, held] = [[], await finishMany(finishes)];
    else ({ claimed, held } = await writeMany(claims, finishes));
    let c = 0;
    let f = 0;
    return writes.map((w) => ("claim" in w ? claimed[c++]! : held[f++]!));
  };
  const write = batcher<Write, Written>({
    one,
    many,
    key: (w) => ("claim" in w ? w.claim.row.thread_id : w.finish.lease.threadId),
    ...batching,
  });
  const claim = (c: Claim) => write({ claim: c }) as Promise<Claimed>;
  const finish = (f: Finish) => write({ finish: f }) as Promise<boolean>;

  return {
    claimThread: (row, lease, start) => guard(() => claim({ row, holder: lease.holder, ttlMs: lease.ttlMs, start })),
    createRun: (run, append) => guard(async () => {
      if (append && append.messages.length > 0) {
        // One round trip: the record, the messages and the thread's updated_at; the record is
        // fenced like the messages: a run whose lease moved on leaves no record behind either.
        const [r] = await sql`
          WITH fence AS (${fenceOn(sql, run.thread_id, append.fence?.generation ?? null)}),
          run AS (${insertRuns(sql`SELECT 0, ${json(run)}::jsonb WHERE EXISTS (SELECT 1 FROM fence)`)}),
          ${appendFenced(sql, run.thread_id, append.messages, append.at)}
          SELECT count(*)::int AS n FROM ins`;
        if (r!.n !== append.messages.length) throw new LeaseLost();
        return;
      }
      await insertRuns(sql`SELECT 0, ${json(run)}::jsonb`);
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
