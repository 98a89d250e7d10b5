/** The events of a run (spec 6.1), a union on `type`; http/sse.ts is the one place that encodes them. */
import type { PublicApproval } from "../approvals/view.js";
import type { RunStatus } from "../store/ports.js";
import type { JsonValue } from "../json.js";

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export type SseErrorCode =
  | "run_failed"
  | "timeout"
  | "recursion_limit"
  | "thread_busy"
  | "approval_pending"
  | "unavailable"
  | "forbidden"
  | "unsupported_interrupt"
  | "invalid_structured_response";

export type RunEvent =
  | { type: "message.start"; thread_id: string; run_id: string; approval_id?: string; decision?: string }
  | { type: "message.delta"; text: string }
  | { type: "tool.call"; id: string; name: string; args: Record<string, JsonValue> }
  | { type: "tool.result"; id: string; name: string; result: string; is_error: boolean; error_id?: string }
  | {
      type: "message.end";
      thread_id: string;
      run_id: string;
      usage: Usage;
      latency_ms: number;
      status: Extract<RunStatus, "ok" | "step_limit" | "awaiting_approval">;
      /** Paused runs: the first approval of the pause and all of them. */
      approval?: PublicApproval;
      approvals?: PublicApproval[];
      /** A completed run with a response schema: the checked answer. */
      structured_response?: JsonValue;
    }
  | { type: "error"; code: SseErrorCode; message: string; error_id: string; run_id: string; detail?: string };
