/// <reference types="node" />
/**
 * The PostgreSQL connection (CHECKPOINTER=sql) with the `postgres` package, Node only: loaded
 * lazily by createApp, never part of the worker bundle. Every connection value comes from
 * SQLDB_DSN (passed through unchanged otherwise): nothing falls back to PG* variables. The
 * schema is created at startup, idempotently. Health is tracked for /ready, agent_database_up
 * and fast 503s while the database is known down.
 */
import postgres from "postgres";
import { AppError } from "../../errors.js";
import type { Logger } from "../../observability/logger.js";

export type Sql = postgres.Sql;
/** A piece of a statement (sql`...`), composed into another one where it is interpolated. */
export type Fragment = postgres.Fragment;

export class DatabaseUnavailable extends AppError {
  /**
   * The server is up but cancelled the statement (a lock or statement timeout, a deadlock) and
   * rolled it back: "busy", not "unreachable", in what the client reads. Read by `busy` in errors.ts.
   */
  readonly busy: boolean;
  constructor(options?: { cause?: unknown; busy?: boolean }) {
    super("unavailable", options?.busy ? "The database is busy; nothing was done." : "The database is unreachable.", options);
    this.name = "DatabaseUnavailable";
    this.busy = options?.busy === true;
  }
}

/**
 * Server-side limits of every statement. The server cancels a statement that waits on a lock
 * longer than LOCK_TIMEOUT_MS or runs longer than STATEMENT_TIMEOUT_MS and rolls it back, well
 * before the guard's own deadline (health.ts: 2 s once the database is known down, 3 s while up)
 * gives up on the answer: so a 503 means the statement did nothing, and a retry works at once.
 * (A deadline raced on the client alone leaves the statement running on the server, where it
 * may still commit after the caller was told it failed.)
 */
export const STATEMENT_TIMEOUT_MS = 1_800;
export const LOCK_TIMEOUT_MS = 1_500;

export interface ConnectOptions {
  readonly dsn: string;
  readonly min: number;
  readonly max: number;
  /** A schema to create and use (tests give each run its own). */
  readonly schema?: string;
  readonly logger: Logger;
  readonly onHealth?: (up: boolean) => void;
}

/** libpq's sslmode values, as the driver takes them (verify-ca: a trusted chain, any host name). */
const SSL_MODES: Record<string, postgres.Options<{}>["ssl"]> = {
  disable: false,
  allow: "allow",
  prefer: "prefer",
  require: "require",
  "verify-ca": { rejectUnauthorized: true, checkServerIdentity: () => undefined },
  "verify-full": "verify-full",
};

/**
 * The DSN's parts, and its query parameters as libpq reads them: `sslmode`, `connect_timeout`
 * (seconds), `application_name`; any other parameter is a server setting sent at connection
 * start (`?search_path=app`, `?TimeZone=UTC`). The service's own statement and lock timeouts win.
 */
export function connect(options: ConnectOptions): Sql {
  const url = new URL(options.dsn);
  const params = Object.fromEntries(url.searchParams);
  const { sslmode, connect_timeout: connectTimeout, application_name: applicationName, ...serverSettings } = params;
  const password = url.password ? decodeURIComponent(url.password) : "";
  return postgres({
    host: url.hostname || "localhost",
    port: Number(url.port || 5432),
    database: decodeURIComponent(url.pathname.slice(1)) || "postgres",
    username: decodeURIComponent(url.username) || "postgres",
    // A function, so an empty password never falls back to PGPASSWORD.
    password: () => password,
    ssl: SSL_MODES[sslmode ?? "disable"] ?? false,
    max: options.max,
    idle_timeout: 30,
    connect_timeout: connectTimeout && Number(connectTimeout) > 0 ? Number(connectTimeout) : 2,
    prepare: true,
    onnotice: () => {},
    connection: {
      ...serverSettings,
      application_name: applicationName ?? "agent-service",
      statement_timeout: STATEMENT_TIMEOUT_MS,
      lock_timeout: LOCK_TIMEOUT_MS,
      ...(options.schema ? { search_path: options.schema } : {}),
    },
    transform: { undefined: null },
  });
}

/** DB_POOL_MIN_SIZE: that many connections are opened at start, so the first requests find them. */
export async function warm(sql: Sql, min: number): Promise<void> {
  if (min > 0) await Promise.all(Array.from({ length: min }, () => sql`SELECT 1`));
}

/**
 * Tables and columns, created if missing (spec 9: ADD COLUMN IF NOT EXISTS). A replica starting
 * while the schema is current changes nothing and takes no lock but the catalog's: `ALTER TABLE
 * ... IF NOT EXISTS` takes an exclusive table lock even when it changes nothing, and queued
 * behind a long transaction (a backup, a report) it would stall every other replica's queries on
 * that table. When something is missing, one replica at a time (an advisory lock) applies the
 * DDL with a short lock timeout, retrying, so a waiting migration never holds others up long.
 */
export async function migrate(sql: Sql, schema: string | undefined, options: { retries?: number; lockTimeoutMs?: number } = {}): Promise<void> {
  if (await schemaIsCurrent(sql, schema)) return;
  const retries = options.retries ?? 20;
  const lockTimeout = options.lockTimeoutMs ?? 500;
  for (let attempt = 0; ; attempt++) {
    try {
      await sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL lock_timeout = ${lockTimeout}`);
        await tx.unsafe(`SET LOCAL statement_timeout = 0`);
        await tx`SELECT pg_advisory_xact_lock(4242001)`;
        if (schema) await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema.replace(/"/g, "")}"`);
        // Another replica may have brought the schema up to date while this one waited.
        if (await schemaIsCurrent(tx, schema)) return;
        await tx.unsafe(DDL);
      });
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "55P03" || attempt >= retries) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** Math.min(attempt, 4))));
    }
  }
}

/** Every table, column, index and sequence the DDL makes, and the lease table's fillfactor. */
const EXPECTED = {
  columns: {
    threads: ["thread_id", "owner", "created_at", "updated_at", "actor"],
    messages: ["thread_id", "seq", "message"],
    runs: ["run_id", "thread_id", "status", "principal_hash", "created_at", "updated_at", "error_type", "error_id", "actor", "metadata", "usage", "ended_at", "latency_ms", "resumed_from", "resumed_by"],
    approvals: ["approval_id", "thread_id", "run_id", "status", "requester", "approvers", "created_at", "expires_at", "shown", "internal", "requester_actor"],
    a2a_tasks: ["task_id", "context_id", "owner", "state", "created_at", "updated_at", "actor", "status_parts", "artifacts", "approval_ids", "run_id", "instance_id"],
    leases: ["thread_id", "holder", "generation", "expires_at"],
  } as Record<string, string[]>,
  indexes: ["messages_id", "threads_owner_updated", "threads_updated", "runs_thread", "runs_running", "runs_paused", "approvals_thread", "approvals_run", "approvals_pending", "approvals_requester", "approvals_approvers", "a2a_tasks_owner", "a2a_tasks_context", "a2a_tasks_open", "a2a_tasks_updated"],
  sequences: ["lease_generation"],
};

/** Reads the catalog only: no table lock is taken. */
async function schemaIsCurrent(sql: Sql | postgres.TransactionSql, schema: string | undefined): Promise<boolean> {
  const ns = schema ?? null;
  const rows = await sql`
    SELECT c.relname AS name, c.relkind AS kind, c.reloptions AS options,
      array_remove(array_agg(a.attname::text), NULL) AS columns
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    WHERE n.nspname = coalesce(${ns}::text, current_schema()) AND c.relkind IN ('r', 'i', 'S')
    GROUP BY c.relname, c.relkind, c.reloptions`;
  const found = new Map(rows.map((r) => [r.name as string, r]));
  for (const [table, columns] of Object.entries(EXPECTED.columns)) {
    const have = found.get(table);
    if (!have || have.kind !== "r") return false;
    const cols = new Set(have.columns as string[]);
    if (!columns.every((c) => cols.has(c))) return false;
  }
  if (!((found.get("leases")?.options as string[] | null) ?? []).includes("fillfactor=50")) return false;
  return EXPECTED.indexes.every((i) => found.get(i)?.kind === "i") && EXPECTED.sequences.every((q) => found.get(q)?.kind === "S");
}

const DDL = `
    CREATE TABLE IF NOT EXISTS threads (
      thread_id text PRIMARY KEY,
      owner text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    ALTER TABLE threads ADD COLUMN IF NOT EXISTS actor text;
    CREATE INDEX IF NOT EXISTS threads_owner_updated ON threads (owner, updated_at DESC, thread_id);
    CREATE INDEX IF NOT EXISTS threads_updated ON threads (updated_at DESC, thread_id);

    CREATE TABLE IF NOT EXISTS messages (
      thread_id text NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      message jsonb NOT NULL,
      PRIMARY KEY (thread_id, seq)
    );
    -- A page of messages is asked for next to a message named by its id.
    CREATE INDEX IF NOT EXISTS messages_id ON messages ((message->>'id'));

    CREATE TABLE IF NOT EXISTS runs (
      run_id text PRIMARY KEY,
      thread_id text NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
      status text NOT NULL,
      principal_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS error_type text;
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS error_id text;
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS actor text;
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS metadata jsonb NOT NULL DEFAULT '{}';
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS usage jsonb NOT NULL DEFAULT '{"input_tokens":0,"output_tokens":0}';
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS ended_at timestamptz;
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS latency_ms integer;
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS resumed_from text;
    ALTER TABLE runs ADD COLUMN IF NOT EXISTS resumed_by text;
    CREATE INDEX IF NOT EXISTS runs_thread ON runs (thread_id);
    CREATE INDEX IF NOT EXISTS runs_running ON runs (status) WHERE status = 'running';
    CREATE INDEX IF NOT EXISTS runs_paused ON runs (thread_id) WHERE status = 'awaiting_approval' AND resumed_by IS NULL;

    CREATE TABLE IF NOT EXISTS approvals (
      approval_id text PRIMARY KEY,
      thread_id text NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
      run_id text NOT NULL,
      status text NOT NULL,
      requester text NOT NULL,
      approvers text[] NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      shown jsonb NOT NULL,
      internal jsonb NOT NULL
    );
    ALTER TABLE approvals ADD COLUMN IF NOT EXISTS requester_actor text;
    CREATE INDEX IF NOT EXISTS approvals_thread ON approvals (thread_id, created_at DESC);
    CREATE INDEX IF NOT EXISTS approvals_run ON approvals (run_id);
    CREATE INDEX IF NOT EXISTS approvals_pending ON approvals (expires_at) WHERE status = 'pending';
    CREATE INDEX IF NOT EXISTS approvals_requester ON approvals (requester, created_at DESC, approval_id DESC);
    CREATE INDEX IF NOT EXISTS approvals_approvers ON approvals USING gin (approvers);

    CREATE TABLE IF NOT EXISTS a2a_tasks (
      task_id text PRIMARY KEY,
      context_id text NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
      owner text NOT NULL,
      state text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS actor text;
    ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS status_parts jsonb NOT NULL DEFAULT '[]';
    ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS artifacts jsonb NOT NULL DEFAULT '[]';
    ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS approval_ids text[] NOT NULL DEFAULT '{}';
    ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS run_id text;
    ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS instance_id text;
    CREATE INDEX IF NOT EXISTS a2a_tasks_owner ON a2a_tasks (owner, updated_at DESC);
    CREATE INDEX IF NOT EXISTS a2a_tasks_context ON a2a_tasks (context_id);
    CREATE INDEX IF NOT EXISTS a2a_tasks_open ON a2a_tasks (updated_at, task_id) WHERE state IN ('input-required', 'working');
    CREATE INDEX IF NOT EXISTS a2a_tasks_updated ON a2a_tasks (updated_at);

    CREATE TABLE IF NOT EXISTS leases (
      thread_id text PRIMARY KEY,
      holder text NOT NULL,
      generation bigint NOT NULL,
      expires_at timestamptz NOT NULL
    );
    -- A released lease stays as an expired row (updated in place, not deleted): free room on
    -- each page keeps those updates on the page, so a busy lease table leaves nothing to vacuum.
    ALTER TABLE leases SET (fillfactor = 50);
    CREATE SEQUENCE IF NOT EXISTS lease_generation;
`;
