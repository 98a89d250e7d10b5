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

export class DatabaseUnavailable extends AppError {
  constructor(options?: { cause?: unknown }) {
    super("unavailable", "The database is unreachable.", options);
    this.name = "DatabaseUnavailable";
  }
}

export interface ConnectOptions {
  readonly dsn: string;
  readonly min: number;
  readonly max: number;
  /** A schema to create and use (tests give each run its own). */
  readonly schema?: string;
  readonly logger: Logger;
  readonly onHealth?: (up: boolean) => void;
}

export function connect(options: ConnectOptions): Sql {
  const url = new URL(options.dsn);
  const ssl = url.searchParams.get("sslmode");
  const password = url.password ? decodeURIComponent(url.password) : "";
  return postgres({
    host: url.hostname || "localhost",
    port: Number(url.port || 5432),
    database: decodeURIComponent(url.pathname.slice(1)) || "postgres",
    username: decodeURIComponent(url.username) || "postgres",
    // A function, so an empty password never falls back to PGPASSWORD.
    password: () => password,
    ssl: ssl === "require" || ssl === "verify-full" ? (ssl === "verify-full" ? "verify-full" : "require") : false,
    max: options.max,
    idle_timeout: 30,
    connect_timeout: 2,
    prepare: true,
    onnotice: () => {},
    connection: {
      application_name: "agent-service",
      ...(options.schema ? { search_path: options.schema } : {}),
    },
    transform: { undefined: null },
  });
}

/** Tables and columns, created if missing (spec 9: ADD COLUMN IF NOT EXISTS). */
export async function migrate(sql: Sql, schema: string | undefined): Promise<void> {
  // Replicas starting together would race on CREATE ... IF NOT EXISTS: one at a time.
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(4242001)`;
    if (schema) await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema.replace(/"/g, "")}"`);
    await tx.unsafe(DDL);
  });
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
