/**
 * Rows as PostgreSQL answers them, mapped to the store's records; and values on their way in,
 * cleared of U+0000 (PostgreSQL text and jsonb cannot hold it: stored as U+FFFD).
 */
import type { ApprovalRecord } from "../records/approval.js";
import type { TaskRecord } from "../records/task.js";
import type { RunRecord, ThreadRow } from "../ports.js";
import type { Sql } from "./connect.js";
import { hasNul, withoutNul } from "../../json.js";

export { withoutNul };

export type Row = Record<string, unknown>;

export const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString().replace("Z", "+00:00"));

/** A value as a jsonb parameter, without U+0000 (copied only when it holds one). */
export const jsonb = (sql: Sql) => (v: unknown) => sql.json((hasNul(v) ? withoutNul(v) : v) as never);

export function threadOf(r: Row): ThreadRow {
  return { thread_id: r.thread_id as string, owner: r.owner as string, actor: (r.actor as string | null) ?? null, created_at: iso(r.created_at as Date)!, updated_at: iso(r.updated_at as Date)! };
}

export function runOf(r: Row): RunRecord {
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

export function taskOf(r: Row): TaskRecord {
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

export function approvalOf(r: Row): ApprovalRecord {
  // Rows written before `outcome` existed read as null.
  const shown = r.shown as Omit<ApprovalRecord, "internal">;
  return { ...shown, outcome: shown.outcome ?? null, internal: r.internal as ApprovalRecord["internal"] };
}
