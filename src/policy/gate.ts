/**
 * The port the policy client needs when a call is gated (spec 2.7): something that holds the
 * exact call for a person. approvals/ implements it; app.ts wires the two, so policy/ never
 * imports upward.
 */
import type { Principal } from "../auth/principal.js";
import type { JsonValue } from "../json.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { ApiResponse, RecordedApproval, RelayRecord } from "./types.js";

export type { RecordedApproval, RelayRecord } from "./types.js";
import type { Gate } from "./document.js";

/** The call exactly as it would be sent. */
export interface HeldCall {
  readonly api: string;
  readonly method: string;
  /** Concrete path, ids filled in. */
  readonly path: string;
  readonly operationId: string | null;
  readonly rpcMethod: string | null;
  readonly a2aOperation: "approve" | "reject" | null;
  readonly query: readonly (readonly [string, string])[];
  readonly body: JsonValue | undefined;
  readonly redact: readonly string[];
  /**
   * Set by the built-in peer tools only: the call decides a peer agent's approval that relays
   * through this agent; the approval asked here shows it (`nested`, `effect`) and expires
   * before it (spec 2.3).
   */
  readonly relay?: RelayRecord;
}

/** Where the call comes from: the run, the tool call, and who asked. */
export interface HoldContext {
  readonly threadId: string;
  readonly runId: string;
  readonly tool: string;
  readonly toolCallId: string;
  /** The model's words of the turn that made the call (unverified). */
  readonly reason: string;
  readonly principal: Principal;
  readonly signal: AbortSignal;
  /** The run resumes after a decision: its tool calls may already have approvals. */
  readonly resumed: boolean;
  /** The tool call's span (tracing on): a pause is its child. */
  readonly span?: TraceSpan | undefined;
  /** The run's span (tracing on): kept with an approval it waits on, for the resumed run to link to. */
  readonly runSpan?: TraceSpan | undefined;
}

export type HoldOutcome =
  /** Not gated and nothing recorded for it: send as usual. */
  | { readonly kind: "free" }
  /** Approved, not sent yet: claim it, then send exactly this recorded call and report its answer. */
  | { readonly kind: "send"; readonly call: HeldCall; readonly approvalId: string }
  /** Approved and already sent by an earlier run: this is its answer. */
  | { readonly kind: "answered"; readonly response: ApiResponse };

export interface ApprovalGate {
  /**
   * Decides what happens to a gated call: records a pending approval and pauses the run (throws
   * an error with code `paused`), or lets an approved call through once, or throws
   * ApiPolicyError when it was rejected, expired or the policy changed while it waited. A call
   * it need not look up (no rule gates it, and the run is not resuming) may be let through with
   * a plain `free`, not a promise: the client then sends it in the same turn.
   */
  hold(call: HeldCall, gate: Gate | null, context: HoldContext): HoldOutcome | Promise<HoldOutcome>;
  /**
   * Marks the approved call as being sent, just before it is sent (after every refusal was
   * decided). Exactly one caller ever gets true; a call claimed once is never sent again.
   */
  claim(approvalId: string): Promise<boolean>;
  /** Keeps the answer of a sent approved call. */
  answered(approvalId: string, response: ApiResponse): Promise<void>;
  /** A claimed call whose answer never came (a timeout, a cut connection): it may have reached the API. */
  unanswered?(approvalId: string): Promise<void>;
  /** The approvals one tool call of a thread asked for, oldest first. */
  recorded(threadId: string, toolCallId: string): Promise<readonly RecordedApproval[]>;
}
