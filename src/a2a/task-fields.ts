/**
 * What a task shows once its run has ended (spec 3.3): the answer as the `response` artifact, the
 * approvals it waits for as an approval_request data part with a text part naming each call, or
 * the run's error code. Pure: tasks.ts and the run bridge store what these return.
 */
import type { RunOutcome } from "../agent/outcome.js";
import type { ApprovalRecord } from "../approvals/types.js";
import type { JsonValue } from "../json.js";
import type { TaskPart, TaskRecord } from "./types.js";

export function taskFields(outcome: RunOutcome, artifactId: string): Partial<TaskRecord> {
  if (outcome.ended === "awaiting_approval")
    return awaiting(outcome.approvals.map((a) => a.approval_id), outcome.approvals as unknown as Record<string, JsonValue>[]);
  if (outcome.ended === "ok" || outcome.ended === "step_limit") {
    const parts: TaskPart[] = [{ kind: "text", text: outcome.text }];
    if (outcome.structured !== undefined) parts.push({ kind: "data", data: outcome.structured, mediaType: "application/json" });
    return { state: "completed", artifacts: [{ artifactId, name: "response", parts }], status_parts: [], approval_ids: [], run_id: null };
  }
  const code = outcome.errorCode ?? "run_failed";
  return { state: "failed", status_parts: [{ kind: "text", text: `The run failed (${code}).` }, { kind: "data", data: { type: "error", code } }], run_id: null };
}

/** A relayed decision's effect (spec 4.5): the call that will really happen, where, and through whom. */
function effectText(effect: JsonValue | undefined): string {
  if (!effect || typeof effect !== "object" || Array.isArray(effect)) return "";
  const via = Array.isArray(effect.via) && effect.via.length > 0 ? ` via ${effect.via.map(String).join(", ")}` : "";
  const body = effect.body === null || effect.body === undefined ? "" : ` with body ${JSON.stringify(effect.body).slice(0, 2000)}`;
  return `; it approves ${String(effect.method)} ${String(effect.path)} on API ${String(effect.api)} by agent ${String(effect.agent)}${via}${body}`;
}

/** Input-required, listing `ids`; each call's body shows at most 2000 characters of JSON. */
export function awaiting(ids: string[], approvals: Record<string, JsonValue>[]): Partial<TaskRecord> {
  const lines = approvals.map((a) => {
    const body = a.body === null || a.body === undefined ? "" : ` with body ${JSON.stringify(a.body).slice(0, 2000)}`;
    return `${String(a.method)} ${String(a.path)} on API ${String(a.api)}${body} waits for approval ${String(a.approval_id)}${effectText(a.effect)}`;
  });
  return {
    state: "input-required",
    approval_ids: ids,
    run_id: null,
    status_parts: [
      { kind: "text", text: lines.join("\n") },
      { kind: "data", data: { type: "approval_request", approval: approvals[0] ?? null, approvals, approval_json: JSON.stringify(approvals[0] ?? null) } },
    ],
  };
}

/** Input-required on stored approvals still pending (their internal part left out), after the ids of `decided` ones. */
export function awaitingStored(decided: readonly string[], pending: readonly ApprovalRecord[]): Partial<TaskRecord> {
  const shown = pending.map((a) => ({ ...a, internal: undefined }) as unknown as Record<string, JsonValue>);
  return awaiting([...decided, ...pending.map((a) => a.approval_id)], shown);
}
