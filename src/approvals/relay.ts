/**
 * Relayed approvals (spec 2.3, CONTRACT 6): a peer agent paused for an approval whose rule
 * relays through this agent, so this agent asks its own person, with an approval of its own that
 * shows what is really decided: `nested`, the peer's approval as the peer reported it (with the
 * approval it relays in turn), and `effect`, the call that will actually happen, the agent that
 * makes it and `via`, the agents between (nearest first, neither end included).
 */
import type { JsonValue } from "../json.js";

type Json = Record<string, JsonValue>;

/** A relayed-decision approval expires at least this long before the approval it decides. */
export const RELAY_MARGIN_MS = 5_000;

/** What the gate records with the approval that relays a peer's. */
export interface Relay {
  readonly nested: Json;
  readonly effect: Json;
  /** The latest the approval here may expire (ISO): the peer's expiry less RELAY_MARGIN_MS. */
  readonly expiresBy: string;
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** The call part of an approval as reported (its fields, or null where missing). */
function callOf(a: Json): Json {
  return {
    api: str(a.api),
    method: str(a.method),
    path: str(a.path),
    operation_id: str(a.operation_id),
    rpc_method: str(a.rpc_method),
    a2a_operation: str(a.a2a_operation),
    query: a.query ?? null,
    body: a.body ?? null,
  };
}

/**
 * The peer's approval (as its A2A task reported it) made into `nested` and `effect`. `agent` is
 * the API this agent reaches the peer by; `reportedBy` the name the peer's card gives itself.
 * Undefined when the report lacks what a person needs to see (id, digest, expiry).
 */
export function relayOf(agent: string, reportedBy: string | null, reported: Json): Relay | undefined {
  const approvalId = str(reported.approval_id);
  const digest = str(reported.digest);
  const expires = str(reported.expires_at);
  const expiresMs = expires ? Date.parse(expires) : NaN;
  if (!approvalId || !digest || !Number.isFinite(expiresMs)) return undefined;
  const inner = isObject(reported.nested) ? reported.nested : null;
  const nested: Json = {
    agent,
    approval_id: approvalId,
    call: callOf(reported),
    reason: str(reported.reason),
    expires_at: new Date(expiresMs).toISOString().replace("Z", "+00:00"),
    digest,
    reported_by: reportedBy,
    decide_with: str(reported.decide_with),
    nested: inner,
  };
  // The peer relays in turn: the call that really happens is the one its own effect names,
  // one agent further away.
  const further = inner && isObject(reported.effect) ? reported.effect : null;
  const effect: Json = further
    ? { ...further, via: [agent, ...(Array.isArray(further.via) ? further.via : [])] }
    : { agent, via: [], ...callOf(reported) };
  return { nested, effect, expiresBy: new Date(expiresMs - RELAY_MARGIN_MS).toISOString().replace("Z", "+00:00") };
}

/** `nested` and `effect` once decided: every call's query and body dropped (spec 2.3). */
export function decidedRelay(nested: JsonValue, effect: JsonValue): { nested: JsonValue; effect: JsonValue } | undefined {
  if (nested === null && effect === null) return undefined;
  return { nested: withoutCalls(nested), effect: isObject(effect) ? { ...effect, query: null, body: null } : effect };
}

function withoutCalls(nested: JsonValue): JsonValue {
  if (!isObject(nested)) return nested;
  const call = isObject(nested.call) ? { ...nested.call, query: null, body: null } : nested.call ?? null;
  return { ...nested, call, nested: withoutCalls(nested.nested ?? null) };
}
