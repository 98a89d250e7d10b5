/**
 * What a peer's task comes to, as the tool returns it: a task still working is followed with
 * GetTask; a task waiting for approvals that relay through this agent pauses this run with
 * approvals of its own (relay.ts) and, once decided, goes on with the peer's answer, which may
 * wait for a further approval; approvals decided at the peer directly are reported with
 * `needs_direct_approval: true`, nothing asked here.
 */
import { ApiCallError } from "../../errors.js";
import type { JsonValue } from "../../json.js";
import { isPeerApiClient } from "../../policy/types.js";
import type { PeerCard } from "./card.js";
import { decisionMethod, relayApprovals, relayedOf, replayDecisions, sortApprovals, waitingApprovals } from "./relay.js";
import { isObject, type PeerTask } from "./reply.js";
import { peerResult } from "./result.js";
import type { Session } from "./session.js";

type Json = Record<string, JsonValue>;

/** A chain of relayed approvals longer than this is reported, not relayed again in one tool call. */
const MAX_RELAY_ROUNDS = 8;

/** What a person deciding at the peer needs to know of each approval. */
function shown(a: Json): Json {
  const call = [a.method, a.path].filter((x) => typeof x === "string").join(" ");
  return {
    approval_id: a.approval_id ?? null,
    waits_for: call && typeof a.api === "string" ? `${call} on API ${a.api}` : call || null,
    decide_with: a.decide_with ?? null,
    expires_at: a.expires_at ?? null,
  };
}

/**
 * `decided`: the peer approvals this tool call already sent a decision on. One that still waits
 * (the peer refused the decision: its note is in the text) is reported, never decided twice.
 */
export async function settle(s: Session, first: PeerTask, knownCard?: PeerCard, decided: Set<string> = new Set()): Promise<Json> {
  let task = first;
  let card = knownCard;
  for (let round = 0; ; round++) {
    card ??= await s.card();
    task = await s.untilSettled(task, card.version);
    const approvals = task.state === "input-required" ? waitingApprovals(task) : [];
    if (approvals.length === 0) return peerResult(task, s.settings.replyMaxChars);
    const canRelay = isPeerApiClient(s.ctx.api) && decisionMethod(s.peer, "approve", card) !== undefined && round < MAX_RELAY_ROUNDS;
    const fresh = approvals.filter((a) => !decided.has(String(a.approval_id)));
    const { relayed, direct } = sortApprovals(s.peer.name, card, fresh, canRelay);
    if (relayed.length === 0) {
      const waiting = [...direct, ...approvals.filter((a) => !fresh.includes(a))];
      return peerResult(task, s.settings.replyMaxChars, { needs_direct_approval: true, approvals: waiting.map(shown) });
    }
    for (const { reported } of relayed) decided.add(String(reported.approval_id));
    task = await relayApprovals(s, card, task, relayed);
  }
}

/**
 * The tool call ran before and asked this agent's person to decide for the peer: carries the
 * decisions to the peer and reads its outcome instead of sending anything again. Undefined when
 * the tool call has no relayed decisions (a first run, or approvals of plain gated calls only).
 */
export async function resumeRelayed(s: Session): Promise<Json | undefined> {
  if (!isPeerApiClient(s.ctx.api)) return undefined;
  const relayed = relayedOf(await s.ctx.api.recorded());
  if (relayed.length === 0) return undefined;
  const replayed = await replayDecisions(s, relayed);
  const max = s.settings.replyMaxChars;
  if (replayed.rejected) {
    const base = replayed.task ? peerResult(replayed.task, max) : { task_id: replayed.taskId, context_id: replayed.contextId, text: "" };
    return {
      ...base,
      state: "rejected",
      peer_state: replayed.task?.state ?? null,
      note: "The person here rejected the other agent's approval (or it expired); the call it waited for was not made.",
    };
  }
  // Every decision was sent and answered by an earlier run that stopped before its tool call ended.
  if (!replayed.task) throw new ApiCallError(`the decision reached the agent ${s.peer.name} earlier, but its answer is not kept here; nothing was sent again`);
  const decided = new Set(relayed.flatMap((r) => (isObject(r.nested) && typeof r.nested.approval_id === "string" ? [r.nested.approval_id] : [])));
  return settle(s, replayed.task, undefined, decided);
}
