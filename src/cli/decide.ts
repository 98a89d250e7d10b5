/// <reference types="node" />
/**
 * Deciding approvals (spec 4.3, 5.7): the decision names the approval's digest, as a relaying
 * agent must and as the service checks when a person sends it, so what was decided is exactly the
 * call that was shown. When a run pauses on an interactive terminal and the caller may decide
 * (the rule lists `requester`, and the caller is the run's requester), the client shows the call and
 * asks `Approve? [y/N]` (y approves, anything else rejects, end of input leaves it waiting);
 * otherwise it prints the commands that decide it. A resumed run streams like any other and may
 * pause again.
 */
import { type Client, problemOf, seg } from "./http.js";
import { safeJson, safeLine } from "./escape.js";
import type { Printer } from "./output.js";
import type { Terminal } from "./prompt.js";
import { type RunOutcome, type ShownApproval, showRun } from "./stream.js";

export interface Session {
  readonly client: Client;
  readonly p: Printer;
  /** Present when a person can answer prompts (an interactive terminal, not --json). */
  readonly terminal: (() => Terminal) | undefined;
}

export type Decision = "approve" | "reject";

type Reply =
  | { readonly kind: "stream"; readonly res: Response }
  | { readonly kind: "recorded"; readonly body: { pending?: ShownApproval[]; queued?: boolean } }
  | { readonly kind: "refused"; readonly message: string };

export async function sendDecision(s: Session, approval: Pick<ShownApproval, "thread_id" | "approval_id" | "digest">, decision: Decision, comment?: string): Promise<Reply> {
  const res = await s.client.send("POST", `/threads/${seg(approval.thread_id)}/approvals/${seg(approval.approval_id)}`, {
    body: { decision, digest: approval.digest, ...(comment !== undefined ? { comment } : {}) },
    accept: "text/event-stream",
  });
  if (res.status !== 200) return { kind: "refused", message: await problemOf(res) };
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) return { kind: "stream", res };
  return { kind: "recorded", body: (await res.json()) as { pending?: ShownApproval[]; queued?: boolean } };
}

/** `agentcli approve|reject THREAD_ID APPROVAL_ID`: reads the approval for its digest, decides, streams the resumed run. */
export async function decideCommand(s: Session, decision: Decision, threadId: string, approvalId: string, comment: string | undefined): Promise<number> {
  const list = await s.client.send("GET", `/threads/${seg(threadId)}/approvals`);
  if (list.status !== 200) {
    s.p.error(await problemOf(list));
    return 1;
  }
  const approval = ((await list.json()) as ShownApproval[]).find((a) => a.approval_id === approvalId);
  if (!approval) {
    s.p.error(`no approval ${safeLine(approvalId)} on thread ${safeLine(threadId)} that you may see`);
    return 1;
  }
  const reply = await sendDecision(s, { ...approval, thread_id: threadId }, decision, comment);
  return settleReply(s, reply, decision, threadId, approvalId);
}

async function settleReply(s: Session, reply: Reply, decision: Decision, threadId: string, approvalId: string): Promise<number> {
  if (reply.kind === "refused") {
    s.p.error(reply.message);
    return 1;
  }
  if (reply.kind === "recorded") {
    s.p.record(reply.body);
    recorded(s, decision, reply.body);
    return 0;
  }
  return followRun(s, await showRun(reply.res, s.p, { knownThread: threadId }), { decided: { threadId, approvalId } });
}

function recorded(s: Session, decision: Decision, body: { pending?: ShownApproval[]; queued?: boolean }): void {
  const more = body.pending?.length ?? 0;
  s.p.text(`[${decision === "approve" ? "approved" : "rejected"}; recorded${more > 0 ? `; ${more} more approval${more === 1 ? "" : "s"} of this run wait` : ""}${body.queued ? "; the run resumes shortly" : ""}]\n`);
  if (more > 0 && !body.queued) printCommands(s, body.pending!);
}

/**
 * How the caller stands to the run it follows: it started the run (a chat on its own thread), or
 * it decided an approval of the run, perhaps as a `role:` approver rather than the requester.
 */
export type Follower = { readonly started: true } | { readonly decided: { readonly threadId: string; readonly approvalId: string } };

/**
 * After a run: while it waits for approvals the caller may decide at a terminal (the rule lists
 * `requester` and the caller is the run's requester), asks; else prints how to decide.
 */
export async function followRun(s: Session, outcome: RunOutcome, follower: Follower): Promise<number> {
  let current = outcome;
  /** The caller's principal as approvals name it (hashed): known once something shows it. */
  let self: string | null | undefined;
  while (current.code === 0 && current.status === "awaiting_approval" && current.approvals.length > 0) {
    const pending = current.approvals;
    if (s.terminal && self === undefined) self = await callerAmong(s, follower, pending);
    const askable = s.terminal && self ? pending.filter((a) => a.approvers.includes("requester") && a.requester === self) : [];
    for (const a of pending) showApproval(s, a);
    if (askable.length === 0) {
      printCommands(s, pending);
      return 0;
    }
    const terminal = s.terminal!();
    let next: RunOutcome | undefined;
    const queue = [...askable];
    while (queue.length > 0 && !next) {
      const a = queue.shift()!;
      const answer = await terminal.ask(askable.length > 1 ? `Approve ${a.approval_id}? [y/N] ` : "Approve? [y/N] ");
      if (answer === undefined) {
        s.p.text("\n");
        printCommands(s, [a, ...queue]);
        return 0;
      }
      const decision: Decision = /^\s*y(es)?\s*$/i.test(answer) ? "approve" : "reject";
      const reply = await sendDecision(s, a, decision);
      if (reply.kind === "refused") {
        s.p.error(reply.message);
        return 1;
      }
      if (reply.kind === "recorded") {
        recorded(s, decision, { ...reply.body, pending: [] });
        if (reply.body.queued) return 0;
        continue;
      }
      next = await showRun(reply.res, s.p, { knownThread: a.thread_id });
    }
    if (!next) {
      const left = pending.filter((a) => !askable.includes(a));
      if (left.length > 0) printCommands(s, left);
      return 0;
    }
    current = next;
  }
  return current.code;
}

/**
 * Who the caller is, as approvals name principals: the requester of the run it started; else the
 * one who decided the approval it decided (a `role:` approver is never the requester, so a run
 * that pauses again is not put to it). null when that cannot be read.
 */
async function callerAmong(s: Session, follower: Follower, pending: readonly ShownApproval[]): Promise<string | null> {
  if ("started" in follower) return pending[0]?.requester ?? null;
  const { threadId, approvalId } = follower.decided;
  const res = await s.client.send("GET", `/threads/${seg(threadId)}/approvals`);
  if (res.status !== 200) {
    await res.body?.cancel();
    return null;
  }
  const decided = ((await res.json()) as ShownApproval[]).find((a) => a.approval_id === approvalId);
  return decided?.decided_by ?? null;
}

function showApproval(s: Session, a: ShownApproval): void {
  const label = [a.operation_id && `operation ${a.operation_id}`, a.rpc_method && `rpc ${a.rpc_method}`, a.a2a_operation && `decision ${a.a2a_operation}`].filter(Boolean).join(", ");
  const lines = [`approval ${a.approval_id} waits: ${a.method} ${a.path} on API ${a.api}${label ? ` (${label})` : ""}`];
  if (a.query && typeof a.query === "object" && Object.keys(a.query).length > 0) lines.push(`  query: ${safeJson(a.query)}`);
  if (a.body !== null) lines.push(`  body: ${safeJson(a.body).slice(0, 2000)}`);
  const effect = a.effect && typeof a.effect === "object" && !Array.isArray(a.effect) ? a.effect : undefined;
  if (effect) {
    const via = Array.isArray(effect.via) && effect.via.length > 0 ? ` via ${effect.via.join(", ")}` : "";
    lines.push(`  effect: ${String(effect.method ?? "")} ${String(effect.path ?? "")} at agent ${String(effect.agent ?? "?")}${via}`);
  }
  if (a.reason) lines.push(`  reason: ${a.reason}`);
  lines.push(`  approvers: ${a.approvers.join(", ")}${a.expires_at ? ` · expires ${a.expires_at}` : ""}`);
  s.p.text(`${lines.map(safeLine).join("\n")}\n`);
}

function printCommands(s: Session, approvals: readonly ShownApproval[]): void {
  const url = s.client.urlOption ? ` --url ${shellWord(s.client.urlOption)}` : "";
  const lines = ["decide with:"];
  for (const a of approvals)
    for (const verb of ["approve", "reject"])
      lines.push(`  agentcli ${verb} ${shellWord(a.thread_id)} ${shellWord(a.approval_id)}${url} [--comment TEXT]`);
  s.p.text(`${lines.map(safeLine).join("\n")}\n`);
}

/** A word a POSIX shell reads back as it is. */
function shellWord(w: string): string {
  return /^[A-Za-z0-9_.:/@%+=,-]+$/.test(w) ? w : `'${w.replace(/'/g, "'\\''")}'`;
}
