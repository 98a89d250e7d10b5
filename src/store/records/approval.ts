/** The approval object (spec 2.3) as stored, and the part of it every reader may see. */
import type { JsonValue } from "../../json.js";

export type ApprovalStatus = "pending" | "approved" | "rejected" | "expired";

/** The requester, as a `role:` approver's decision rebuilds it: public fields only, never credentials. */
export interface StoredPrincipal {
  readonly id: string;
  readonly roles: readonly string[];
  readonly attributes: Readonly<Record<string, JsonValue>>;
  readonly actor: { readonly id: string; readonly chain: readonly string[]; readonly client: string | null } | null;
}

export interface ApprovalRecord {
  readonly approval_id: string;
  readonly thread_id: string;
  readonly run_id: string;
  readonly status: ApprovalStatus;
  readonly api: string;
  readonly method: string;
  readonly path: string;
  readonly operation_id: string | null;
  readonly rpc_method: string | null;
  readonly a2a_operation: "approve" | "reject" | null;
  /** As shown: `redact=` fields masked; dropped once decided unless TRACE_CAPTURE=full. */
  readonly query: Readonly<Record<string, string | readonly string[]>> | null;
  readonly body: JsonValue;
  readonly tool: string;
  readonly reason: string;
  readonly approvers: readonly string[];
  readonly requester: string;
  readonly requester_actor: string | null;
  readonly decide_with: "direct" | "relayed";
  readonly relayers: readonly string[];
  readonly decided_by: string | null;
  readonly decided_via: string | null;
  readonly digest: string;
  readonly nested: JsonValue;
  readonly effect: JsonValue;
  readonly created_at: string;
  readonly expires_at: string;
  readonly decided_at: string | null;
  readonly comment: string | null;
  /**
   * What became of an approved call: `sent` once its answer came back; `unknown` when the process
   * sending it stopped before an answer came (it may or may not have reached the API; it is never
   * sent again, so a person should look); null before.
   */
  readonly outcome: "sent" | "unknown" | null;

  /** Internal, never shown: which tool call waits, the call exactly as it will be sent, the gate. */
  readonly internal: {
    readonly tool_call_id: string;
    readonly gate_key: string;
    readonly call: {
      readonly query: readonly (readonly [string, string])[];
      readonly body: JsonValue | undefined;
    };
    readonly requester_principal: StoredPrincipal;
    readonly executed_at: string | null;
    /** The answer of the sent call, so a replayed tool reads it instead of sending again. */
    readonly result: { readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: JsonValue | string } | null;
    /**
     * The span of the run waiting on it, as a W3C traceparent (tracing on): the run resumed after
     * the decision links to it. Absent on records made with tracing off (or before it existed).
     */
    readonly run_trace?: string | null;
  };
}

export interface ApprovalDecision {
  readonly status: "approved" | "rejected" | "expired";
  readonly decided_by: string | null;
  readonly decided_via: string | null;
  readonly decided_at: string;
  readonly comment: string | null;
  /** Drop the shown query and body (decided, and TRACE_CAPTURE is not full). */
  readonly dropCall: boolean;
  /** A relayed decision's `nested` and `effect` without their calls' query and body (spec 2.3: dropped once decided). */
  readonly relay?: { readonly nested: JsonValue; readonly effect: JsonValue };
}

export interface ListApprovalsQuery {
  readonly thread_id?: string;
  readonly run_id?: string;
  readonly status?: ApprovalStatus;
  /** Only approvals asked through this agent (a delegated reader), filtered before the page is cut. */
  readonly requester_actor?: string;
  readonly limit: number;
  readonly offset: number;
  /** Visible when any of these holds; omitted means every approval (read-across). */
  readonly visibleTo?: { readonly requester: string; readonly roles: readonly string[] };
}
