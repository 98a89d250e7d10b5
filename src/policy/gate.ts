/**
 * The port the policy client needs when a call is gated (spec 2.7): something that holds the
 * exact call for a person. approvals/ implements it; app.ts wires the two, so policy/ never
 * imports upward.
 */
import type { JsonValue } from "../json.js";
import type { Gate } from "./document.js";

/** The call exactly as it would be sent, and as a person is shown it. */
export interface HeldCall {
  readonly api: string;
  readonly method: string;
  /** Concrete path, ids filled in. */
  readonly path: string;
  readonly operationId: string | null;
  readonly rpcMethod: string | null;
  readonly a2aOperation: "approve" | "reject" | null;
  readonly query: readonly [string, string][];
  readonly body: JsonValue | undefined;
  readonly redact: readonly string[];
  readonly tool: string;
}

export interface ApprovalGate {
  /**
   * Resolves when the call may be sent (approved, and the current policy still gates it alike);
   * throws ApiPolicyError when it was rejected or expired. May pause the run until a decision.
   */
  hold(call: HeldCall, gate: Gate, signal: AbortSignal): Promise<void>;
}
