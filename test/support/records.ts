/** Store records for tests that write the store directly, with plain defaults. */
import type { RunRecord } from "../../src/store/ports.js";

/** A running run with nothing recorded yet; `fields` override (created_at and updated_at default to `at`). */
export function runRecord(runId: string, threadId: string, at: string, fields: Partial<RunRecord> = {}): RunRecord {
  return {
    run_id: runId,
    thread_id: threadId,
    status: "running",
    error_type: null,
    error_id: null,
    principal_hash: "0123456789abcdef0123456789abcdef",
    actor: null,
    metadata: {},
    usage: { input_tokens: 0, output_tokens: 0 },
    created_at: at,
    updated_at: at,
    ended_at: null,
    latency_ms: null,
    resumed_from: null,
    resumed_by: null,
    ...fields,
  };
}
