/**
 * Relayed approvals (spec 2.3, 2.7; CONTRACT 6). A peer's task that waits for approvals shows
 * them in a status data part `{type: 'approval_request', approval, approvals, approval_json}`.
 * An approval whose rule relays through this agent (`decide_with: relayed`, the agent the peer saw
 * us as among its `relayers`) is asked here: the decision message is built now, with the peer's
 * digest, and handed to the policy client as a relayed decision; the policy gates approve messages,
 * so the gate records an approval of this agent's own (`nested`, `effect`) and the run pauses.
 * Approvals decided at the peer directly are only reported (`needs_direct_approval`).
 *
 * Replay: once the person decides, the run resumes and runs the same tool call again. It does not
 * send the original message again: it re-sends each recorded decision exactly (the gate sends an
 * approved one once, or pauses again while one is pending); a rejected or expired one becomes a
 * reject sent to the peer, where the policy lets it through without asking anyone.
 */
import { RELAY_MARGIN_MS, relayOf } from "../../approvals/relay.js";
import { isoTime } from "../../clock.js";
import { hasCode } from "../../errors.js";
import type { JsonValue } from "../../json.js";
import type { RecordedApproval, RelayRecord } from "../../policy/types.js";
import type { A2AVersion } from "../jsonrpc.js";
import type { PeerCard } from "./card.js";
import type { Peer } from "./peer.js";
import { dataPart, type PeerMethod, rpcBody, sendParams, userMessage, versionOfBody } from "./protocol.js";
import { isObject, type PeerTask, readReply } from "./reply.js";
import { statusData } from "./result.js";
import type { Session } from "./session.js";

type Json = Record<string, JsonValue>;

/** The approvals a waiting task reports, each as the peer wrote it (the exact JSON text where given). */
export function waitingApprovals(task: PeerTask): Json[] {
  const request = statusData(task, "approval_request");
  if (!request) return [];
  const list = Array.isArray(request.approvals) ? request.approvals.filter(isObject) : isObject(request.approval) ? [request.approval] : [];
  // approval_json is the first approval's exact text: 1.0 data parts carry numbers as doubles.
  let exact: JsonValue = null;
  try {
    exact = typeof request.approval_json === "string" ? (JSON.parse(request.approval_json) as JsonValue) : null;
  } catch {
    exact = null;
  }
  if (!isObject(exact)) return list;
  const exactId = exact.approval_id;
  return list.map((a) => (a.approval_id === exactId ? exact : a));
}

/** The peer's rule relays the decision through the agent the peer saw calling (us). */
export function relaysThroughUs(a: Json): boolean {
  const actor = a.requester_actor;
  return a.decide_with === "relayed" && typeof actor === "string" && Array.isArray(a.relayers) && a.relayers.includes(actor) && (a.status ?? "pending") === "pending";
}

/** How a decision goes to the peer: approves only where the policy asks a person first, rejects where it asks no one. */
export function decisionMethod(peer: Peer, decision: "approve" | "reject", card: PeerCard | undefined): PeerMethod | undefined {
  const want = decision === "approve" ? "gated" : "free";
  const allows = peer.allows[decision];
  if (allows.SendMessage === want) return "SendMessage";
  if (allows.SendStreamingMessage === want && (card?.streaming ?? true)) return "SendStreamingMessage";
  return undefined;
}

/** The decision message on the peer's task: one data part, ids derived from the approval's. */
function decisionBody(v: A2AVersion, method: PeerMethod, task: { taskId: string | undefined; contextId: string | undefined }, approvalId: string, digest: string, decision: "approve" | "reject"): Json {
  const id = `${decision === "approve" ? "relay" : "reject"}-${approvalId}`;
  const message = userMessage({ messageId: id, parts: [dataPart({ approval_id: approvalId, decision, digest }, v)], contextId: task.contextId, taskId: task.taskId }, v);
  return rpcBody(id, method, sendParams(message, v), v);
}

/**
 * Asks this agent's person for each approval (Promise.allSettled: all are recorded before the run
 * pauses). Returns the peer's answer only when the gate let every decision through (decided
 * earlier); a pause, or else the first refusal, is thrown.
 */
export async function relayApprovals(s: Session, card: PeerCard, task: PeerTask, approvals: readonly { reported: Json; relay: RelayRecord }[]): Promise<PeerTask> {
  const method = decisionMethod(s.peer, "approve", card)!;
  const ids = { taskId: task.taskId ?? undefined, contextId: task.contextId ?? undefined };
  const sent = await Promise.allSettled(
    approvals.map(({ reported, relay }) => s.post(decisionBody(card.version, method, ids, String(reported.approval_id), String(reported.digest), "approve"), relay)),
  );
  const failures = sent.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
  const paused = failures.find((e) => hasCode(e, "paused"));
  if (paused !== undefined) throw paused;
  if (failures.length > 0) throw failures[0];
  return (sent.at(-1) as PromiseFulfilledResult<PeerTask>).value;
}

/** The relayed ones among a tool call's recorded approvals (those that carry the peer's approval). */
export function relayedOf(recorded: readonly RecordedApproval[]): RecordedApproval[] {
  return recorded.filter((r) => isObject(r.nested));
}

export interface Replayed {
  /** The peer's answer to the last decision sent, if any was. */
  readonly task: PeerTask | undefined;
  /** A person here rejected one, or it expired. */
  readonly rejected: boolean;
  /** Where the peer's task is, from the recorded bodies (for a result when nothing was sent). */
  readonly taskId: string | null;
  readonly contextId: string | null;
}

/** Re-sends the recorded decisions, in the order they were asked (see the file's comment). */
export async function replayDecisions(s: Session, relayed: readonly RecordedApproval[]): Promise<Replayed> {
  let task: PeerTask | undefined;
  let paused: unknown;
  let rejected = false;
  let where: { taskId: string | null; contextId: string | null } = { taskId: null, contextId: null };
  for (const r of relayed) {
    // A decision already sent and answered: its kept answer is the peer's task as it was then
    // (later approvals recorded after it, if any, carry the task on).
    if (!isObject(r.body)) {
      if (r.answer) task = readReply(s.peer.name, r.answer);
      continue;
    }
    const body = r.body;
    where = messageIds(body);
    if (r.status === "approved" || r.status === "pending") {
      try {
        task = await s.post(body, recordedRelay(s.peer.name, r));
      } catch (error) {
        if (!hasCode(error, "paused")) throw error;
        paused = error;
      }
      continue;
    }
    rejected = true;
    const reject = rejectBody(s.peer, body, r);
    if (!reject) continue;
    try {
      task = await s.post(reject);
    } catch (error) {
      // The reject is a courtesy: the peer's approval expires anyway. A refusal sends nothing.
      if (!hasCode(error, "api_policy") && !hasCode(error, "api_call")) throw error;
    }
  }
  if (paused !== undefined) throw paused;
  return { task, rejected, ...where };
}

function messageIds(body: Json): { taskId: string | null; contextId: string | null } {
  const params = isObject(body.params) ? body.params : {};
  const message = isObject(params.message) ? params.message : {};
  return { taskId: typeof message.taskId === "string" ? message.taskId : null, contextId: typeof message.contextId === "string" ? message.contextId : null };
}

/** The recorded approve decision turned into a reject of the same approval, with the same digest. */
function rejectBody(peer: Peer, approved: Json, r: RecordedApproval): Json | undefined {
  const nested = r.nested as Json;
  const method = decisionMethod(peer, "reject", undefined);
  if (!method || typeof nested.approval_id !== "string" || typeof nested.digest !== "string") return undefined;
  const { taskId, contextId } = messageIds(approved);
  return decisionBody(versionOfBody(approved), method, { taskId: taskId ?? undefined, contextId: contextId ?? undefined }, nested.approval_id, nested.digest, "reject");
}

/**
 * The relay a recorded decision was asked with. The gate finds the recorded approval by the
 * body's digest and never reads this again; it stands for the rare approval no longer found.
 */
function recordedRelay(agent: string, r: RecordedApproval): RelayRecord {
  const nested = r.nested as Json;
  const expires = typeof nested.expires_at === "string" ? Date.parse(nested.expires_at) : NaN;
  const call = isObject(nested.call) ? nested.call : {};
  return { nested, effect: { agent, via: [], ...call }, expiresBy: Number.isFinite(expires) ? isoTime(expires - RELAY_MARGIN_MS) : isoTime(0) };
}

/** The relayable approvals with what the gate records beside each; the rest are decided at the peer. */
export function sortApprovals(agent: string, card: PeerCard, approvals: readonly Json[], canRelay: boolean): { relayed: { reported: Json; relay: RelayRecord }[]; direct: Json[] } {
  const relayed: { reported: Json; relay: RelayRecord }[] = [];
  const direct: Json[] = [];
  for (const reported of approvals) {
    const relay = canRelay && relaysThroughUs(reported) ? relayOf(agent, card.name, reported) : undefined;
    if (relay) relayed.push({ reported, relay });
    else direct.push(reported);
  }
  return { relayed, direct };
}
