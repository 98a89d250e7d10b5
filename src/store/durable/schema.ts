/**
 * The tables, made on the object's first use (CREATE ... IF NOT EXISTS, so it runs on every
 * start). A record is kept whole as JSON in `body`; the columns beside it are the ones queries
 * filter or sort on, written from the same record on every write. Times are the records' ISO
 * strings (one format, isoTime's), compared as text as the memory store compares them.
 */
import type { Sqlite } from "./sql.js";

const TABLES = `
CREATE TABLE IF NOT EXISTS threads (
  thread_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  actor TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_owner ON threads (owner, updated_at);
CREATE INDEX IF NOT EXISTS threads_by_update ON threads (updated_at);
CREATE TABLE IF NOT EXISTS messages (
  thread_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (thread_id, seq)
);
CREATE INDEX IF NOT EXISTS messages_id ON messages (json_extract(body, '$.id'));
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  status TEXT NOT NULL,
  resumed_by TEXT,
  created_at TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, created_at);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, created_at);
CREATE TABLE IF NOT EXISTS approvals (
  approval_id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  requester TEXT NOT NULL,
  requester_actor TEXT,
  approvers TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  digest TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_by_thread ON approvals (thread_id, created_at);
CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id);
CREATE INDEX IF NOT EXISTS approvals_pending ON approvals (status, expires_at);
CREATE TABLE IF NOT EXISTS tasks (
  task_id TEXT PRIMARY KEY,
  context_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  actor TEXT,
  state TEXT NOT NULL,
  run_id TEXT,
  approval_ids TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, updated_at);
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks (context_id);
CREATE INDEX IF NOT EXISTS tasks_by_update ON tasks (updated_at);
CREATE INDEX IF NOT EXISTS tasks_open ON tasks (updated_at, task_id) WHERE state IN ('input-required', 'working');
`;

export function migrate(db: Sqlite): void {
  db.exec(TABLES);
}
