/**
 * The approval gate (spec 2.7, 3.2): a gated call becomes a pending approval and the run pauses;
 * the run resumes after the last decision and the tool runs again. When it makes the same call
 * (same tool call, same digest) the decision applies: approved sends exactly the recorded call,
 * once (claimed atomically, its answer kept for any later replay); rejected or expired sends
 * nothing; a policy that changed while the call waited sends nothing either.
 */
import type { PrincipalHasher } from "../auth/hashing.js";
import { type Clock, isoTime } from "../clock.js";
import { ApiCallError, ApiPolicyError, RunPaused } from "../errors.js";
import type { Ids } from "../ids.js";
import type { Metrics } from "../observability/metrics.js";
import type { Tracing } from "../observability/tracing.js";
import type { Gate } from "../policy/document.js";
import type { ApprovalGate, HeldCall, HoldContext, HoldOutcome } from "../policy/gate.js";
import type { Store } from "../store/ports.js";
import { approvalDigest, redactValue, shownQuery } from "./digest.js";
import type { ApprovalRecord } from "./types.js";

/** Tool calls of each run that wait for approvals (the loop reads it after the tools ran). */
export class PauseBook {
  private readonly runs = new Map<string, Map<string, string[]>>();
  add(runId: string, toolCallId: string, approvalId: string): void {
    let calls = this.runs.get(runId);
    if (!calls) this.runs.set(runId, (calls = new Map()));
    const ids = calls.get(toolCallId) ?? [];
    if (!ids.includes(approvalId)) ids.push(approvalId);
    calls.set(toolCallId, ids);
  }
  isPaused(runId: string, toolCallId: string): boolean {
    return this.runs.get(runId)?.has(toolCallId) ?? false;
  }
  approvalIds(runId: string): string[] {
    return [...(this.runs.get(runId)?.values() ?? [])].flat();
  }
  forget(runId: string): void {
    this.runs.delete(runId);
  }
}

export interface ApprovalGateDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly metrics: Metrics;
  readonly hashPrincipal: PrincipalHasher;
  readonly pauses: PauseBook;
  /** `approval_pause` spans; a no-op facade while tracing is off. */
  readonly tracing: Tracing;
}

const REASON_MAX = 1000;
const FREE: HoldOutcome = Object.freeze({ kind: "free" });

export function createApprovalGate(deps: ApprovalGateDeps): ApprovalGate {
  const { store, clock, ids, metrics, pauses, tracing } = deps;
  /** The run pauses on an approval: a span under the tool call's, marking the moment. */
  const paused = (ctx: HoldContext, approvalId: string, api: string): never => {
    if (tracing.enabled) tracing.approvalSpan("pause", ctx.span, approvalId, api).end();
    throw new RunPaused();
  };

  /** A call a rule gates, or any call of a resuming run: what was recorded for it decides. */
  async function holdRecorded(call: HeldCall, gate: Gate | null, ctx: HoldContext): Promise<HoldOutcome> {
    const shown = {
      api: call.api,
      method: call.method,
      path: call.path,
      operation_id: call.operationId,
      rpc_method: call.rpcMethod,
      a2a_operation: call.a2aOperation,
      query: redactQuery(shownQuery(call.query), call.redact),
      body: redactValue(call.body ?? null, call.redact),
    };
    const digest = await approvalDigest(shown);
    const existing = await store.findApproval(ctx.threadId, ctx.toolCallId, digest);

    if (!existing) {
      if (!gate) return FREE;
      const now = clock.now();
      let expires = now + gate.timeoutS * 1000;
      if (call.relay) {
        // A relayed decision must reach the peer before its own approval expires (spec 2.3).
        const by = Date.parse(call.relay.expiresBy);
        if (!(by > now)) throw new ApiPolicyError("the other agent's approval expires too soon to be relayed; nothing was sent");
        expires = Math.min(expires, by);
      }
      const record: ApprovalRecord = {
        approval_id: ids.runId(),
        thread_id: ctx.threadId,
        run_id: ctx.runId,
        status: "pending",
        ...shown,
        tool: ctx.tool,
        reason: reasonFor(ctx.tool, ctx.reason, shown).slice(0, REASON_MAX),
        approvers: gate.approvers,
        requester: await deps.hashPrincipal(ctx.principal.id),
        requester_actor: ctx.principal.actor?.id ?? null,
        decide_with: gate.decideWith,
        relayers: gate.relayers,
        decided_by: null,
        decided_via: null,
        digest,
        nested: call.relay?.nested ?? null,
        effect: call.relay?.effect ?? null,
        created_at: isoTime(now),
        expires_at: isoTime(expires),
        decided_at: null,
        comment: null,
        outcome: null,
        internal: {
          tool_call_id: ctx.toolCallId,
          gate_key: gate.key,
          call: { query: call.query, body: call.body },
          requester_principal: {
            id: ctx.principal.id,
            roles: ctx.principal.roles,
            attributes: ctx.principal.attributes,
            actor: ctx.principal.actor,
          },
          executed_at: null,
          result: null,
          ...runTrace(ctx),
        },
      };
      await store.createApproval(record);
      metrics.approvals.inc({ event: "requested" });
      pauses.add(ctx.runId, ctx.toolCallId, record.approval_id);
      return paused(ctx, record.approval_id, call.api);
    }

    switch (existing.status) {
      case "pending":
        // A run resumed after a decision on another call of the turn waits on this one now.
        if (existing.run_id !== ctx.runId) await store.moveApproval(existing.approval_id, ctx.runId, runTrace(ctx).run_trace);
        pauses.add(ctx.runId, ctx.toolCallId, existing.approval_id);
        return paused(ctx, existing.approval_id, call.api);
      case "rejected":
        throw new ApiPolicyError(`not approved: the call was rejected${existing.comment ? ` with the comment: ${existing.comment}` : ""}; nothing was sent`);
      case "expired":
        throw new ApiPolicyError("not approved: the approval expired before anyone decided; nothing was sent");
      case "approved": {
        const result = existing.internal.result;
        if (result) return { kind: "answered", response: result };
        if (!gate || gate.key !== existing.internal.gate_key)
          throw new ApiPolicyError("the API policy changed while the call waited for approval (it no longer gates the call the same way); nothing was sent; ask again");
        if (existing.internal.executed_at !== null) {
          // Claimed by a run that stopped before the answer came back (the thread's lease keeps
          // two runs from sending at once): it may have reached the API. Never sent blindly again.
          await store.markOutcomeUnknown(existing.approval_id);
          throw new ApiCallError(
            "the approved call may or may not have reached the API: the run sending it ended before its answer was recorded; it is not sent again; a person should check with the API before asking again",
          );
        }
        return {
          kind: "send",
          approvalId: existing.approval_id,
          call: { ...call, query: existing.internal.call.query, body: existing.internal.call.body },
        };
      }
    }
  }

  return {
    // A call no rule gates, in a run that is not resuming, has nothing recorded to look up: it
    // goes at once, without a promise (most calls of most runs).
    hold: (call, gate, ctx) => (!gate && !ctx.resumed ? FREE : holdRecorded(call, gate, ctx)),
    async claim(approvalId) {
      return store.claimApprovalExecution(approvalId, isoTime(clock.now()));
    },
    async answered(approvalId, response) {
      await store.recordApprovalResult(approvalId, response);
    },
    async unanswered(approvalId) {
      await store.markOutcomeUnknown(approvalId);
    },
    async recorded(threadId, toolCallId) {
      const all = await store.listApprovals({ thread_id: threadId, limit: 100, offset: 0 });
      return all
        .filter((a) => a.internal.tool_call_id === toolCallId)
        .reverse()
        .map((a) => ({
          approvalId: a.approval_id,
          status: a.status,
          body: a.internal.call.body ?? null,
          answer: a.internal.result ?? null,
          nested: a.nested,
          comment: a.comment,
        }));
    },
  };
}

/**
 * Spec 2.3: the tool name followed by the model's text (unverified). A model that called the
 * tool without a word still gets a reason a person can read: the call it makes.
 */
function reasonFor(tool: string, words: string, call: { method: string; api: string; path: string }): string {
  const said = words.trim();
  return said ? `${tool}: ${said}` : `${tool}: ${call.method} ${call.path} on API ${call.api} (the model gave no reason)`;
}

/** The waiting run's span as a traceparent, when there is one (tracing off: nothing is kept). */
function runTrace(ctx: HoldContext): { run_trace?: string } {
  const traceparent = ctx.runSpan?.traceparent();
  return traceparent !== undefined ? { run_trace: traceparent } : {};
}

function redactQuery(query: Record<string, string | string[]>, redact: readonly string[]): Record<string, string | string[]> {
  if (redact.length === 0) return query;
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(query)) out[k] = redact.includes(k) ? "<redacted>" : v;
  return out;
}

