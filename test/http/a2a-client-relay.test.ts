/**
 * Relayed approvals through the A2A client (spec 2.3, 2.7; CONTRACT 6), against a hand-written
 * 1.0 peer that pauses its task for an approval as this service's A2A server reports one. A
 * relayed rule (the peer saw us as `agent-a`, a listed relayer) pauses A's run with an approval of
 * A's own showing `nested` and `effect`; A's person decides and the decision travels to the peer
 * exactly once, with the peer's digest. A direct rule asks nothing at A.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chat, get, KEY, makeApp, parseSse, post, type SseEvent, type TestApp } from "../helpers.js";
import { handPeer, type Peer, PEER_PATH, peerPolicy } from "../support/a2a-peers.js";

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

const EXPIRES = () => new Date(Date.now() + 120_000).toISOString().replace("Z", "+00:00");

/** An approval as this service's A2A server reports it (approvals/view.ts fields). */
function reported(id: string, rule: "relayed" | "direct", expires: string, digest: string) {
  return {
    approval_id: id,
    thread_id: "peer-thread",
    run_id: "peer-run",
    status: "pending",
    api: "bank",
    method: "POST",
    path: "/pay",
    operation_id: null,
    rpc_method: null,
    a2a_operation: null,
    query: {},
    body: { amount: 5 },
    tool: "pay",
    reason: "pay: five",
    approvers: ["requester"],
    requester: "0123abcd",
    requester_actor: "agent-a",
    decide_with: rule,
    relayers: rule === "relayed" ? ["agent-a"] : [],
    decided_by: null,
    decided_via: null,
    digest,
    nested: null,
    effect: null,
    created_at: new Date().toISOString().replace("Z", "+00:00"),
    expires_at: expires,
    decided_at: null,
    comment: null,
  };
}

const task = (state: string, parts: Record<string, unknown>[], artifacts: Record<string, unknown>[] = []) => ({
  task: { id: "task-1", contextId: "ctx-1", status: { state, message: { messageId: "s", role: "ROLE_AGENT", parts } }, artifacts },
});
const waiting = (approval: Record<string, unknown>) =>
  task("TASK_STATE_INPUT_REQUIRED", [{ text: "POST /pay on API bank waits for approval" }, { data: { type: "approval_request", approval, approvals: [approval], approval_json: JSON.stringify(approval) } }]);
const done = (text: string) => task("TASK_STATE_COMPLETED", [], [{ artifactId: "a", name: "response", parts: [{ text }] }]);

/** A peer whose task waits for approval p-1 (and, with `further`, then for p-2), as `rule` says. */
async function gatedPeer(rule: "relayed" | "direct", options: { further?: boolean; refuse?: boolean } = {}) {
  const expires = EXPIRES();
  const approvals = { "p-1": reported("p-1", rule, expires, `sha256:${"a".repeat(64)}`), "p-2": reported("p-2", rule, expires, `sha256:${"b".repeat(64)}`) };
  const peer = await handPeer((call) => {
    const decision = (call.params.message.parts as any[]).find((p) => p.data?.approval_id)?.data;
    if (!decision) return waiting(approvals["p-1"]);
    if (decision.decision === "reject") return done("not paid");
    if (options.refuse) {
      // As this service's server refuses a decision: the task still waits, with a note and the code.
      const still = waiting(approvals["p-1"]);
      still.task.status.message.parts.unshift({ text: "The decision names another digest." }, { data: { type: "error", code: "approval_digest_mismatch" } });
      return still;
    }
    if (options.further && decision.approval_id === "p-1") return waiting(approvals["p-2"]);
    return done("paid");
  });
  opened.push(peer);
  return { peer, approvals, expires };
}

/** A's policy denies approve messages instead of gating them: nothing can be relayed. */
const DENY_APPROVE = `
apis:
  b:
    protocol: a2a
    a2a: { path: ${PEER_PATH} }
    base_url_env: B_URL
    auth: bearer
    token_env: PEER_TOKEN
    allowed_methods: [GET, POST]
    denied_operations: [{ a2a_operation: approve }]
`;

async function agentA(peer: Peer, policy = peerPolicy("b", "B_URL", PEER_PATH)): Promise<TestApp> {
  const app = await makeApp({ PEER_TOKEN: KEY, B_URL: peer.base }, { policyText: policy, tools: [] });
  opened.push(app);
  return app;
}

const ASK = '/call ask_b {"message":"pay five"}';
const toolResult = (events: SseEvent[]) => events.find((e) => e.event === "tool.result")!.data as { result: string; is_error: boolean };
const decisions = (peer: Peer) => peer.rpc().map((c) => (c.params.message.parts as any[]).find((p) => p.data?.approval_id)?.data).filter(Boolean);

async function approvalsAt(app: TestApp, thread: string): Promise<Record<string, any>[]> {
  return (await (await app.fetch(get(`/threads/${thread}/approvals`))).json()) as Record<string, any>[];
}

async function decide(app: TestApp, thread: string, approval: Record<string, any>, decision: "approve" | "reject"): Promise<SseEvent[]> {
  const res = await app.fetch(post(`/threads/${thread}/approvals/${approval.approval_id}`, { decision, digest: approval.digest }));
  expect(res.status).toBe(200);
  return parseSse(await res.text());
}

async function pausedAsk(app: TestApp, thread: string) {
  const { events } = await chat(app, { message: ASK, thread_id: thread });
  expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
  const list = await approvalsAt(app, thread);
  expect(list).toHaveLength(1);
  return list[0]!;
}

describe("a relayed rule at the peer", () => {
  it("pauses A's run with nested and effect, expiring 5 s before the peer's; approving sends the peer one decision with its digest", async () => {
    const { peer, approvals, expires } = await gatedPeer("relayed");
    const app = await agentA(peer);
    const mine = await pausedAsk(app, "t-relay");
    expect(peer.rpc()).toHaveLength(1);
    expect(mine).toMatchObject({
      status: "pending",
      api: "b",
      method: "POST",
      path: PEER_PATH,
      rpc_method: "SendMessage",
      a2a_operation: "approve",
      tool: "ask_b",
      nested: { agent: "b", approval_id: "p-1", digest: approvals["p-1"].digest, reported_by: "hand", decide_with: "relayed", call: { api: "bank", method: "POST", path: "/pay", body: { amount: 5 } } },
      effect: { agent: "b", via: [], api: "bank", method: "POST", path: "/pay", body: { amount: 5 } },
    });
    expect(Date.parse(mine.expires_at)).toBe(Date.parse(expires) - 5_000);
    // What A will send is shown: the decision message on the peer's task, with the peer's digest.
    expect(mine.body.params.message).toMatchObject({ taskId: "task-1", contextId: "ctx-1", parts: [{ data: { approval_id: "p-1", decision: "approve", digest: approvals["p-1"].digest } }] });

    const events = await decide(app, "t-relay", mine, "approve");
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(JSON.parse(toolResult(events).result)).toMatchObject({ task_id: "task-1", state: "completed", text: "paid" });
    expect(decisions(peer)).toEqual([{ approval_id: "p-1", decision: "approve", digest: approvals["p-1"].digest }]);
    expect(peer.rpc()).toHaveLength(2);
  });

  it("rejecting at A sends the peer a reject with the same digest, and the tool reports rejected", async () => {
    const { peer, approvals } = await gatedPeer("relayed");
    const app = await agentA(peer);
    const mine = await pausedAsk(app, "t-reject");
    const events = await decide(app, "t-reject", mine, "reject");
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(JSON.parse(toolResult(events).result)).toMatchObject({ task_id: "task-1", state: "rejected", peer_state: "completed", text: "not paid" });
    expect(decisions(peer)).toEqual([{ approval_id: "p-1", decision: "reject", digest: approvals["p-1"].digest }]);
  });

  it("an answer that waits for a further relayed approval pauses A again; the second decision completes it", async () => {
    const { peer, approvals } = await gatedPeer("relayed", { further: true });
    const app = await agentA(peer);
    const first = await pausedAsk(app, "t-further");
    const resumed = await decide(app, "t-further", first, "approve");
    expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
    const second = (await approvalsAt(app, "t-further")).find((a) => a.status === "pending")!;
    expect(second).toMatchObject({ a2a_operation: "approve", nested: { approval_id: "p-2", digest: approvals["p-2"].digest } });

    const events = await decide(app, "t-further", second, "approve");
    expect(JSON.parse(toolResult(events).result)).toMatchObject({ state: "completed", text: "paid" });
    expect(decisions(peer).map((d) => `${d.approval_id} ${d.decision}`)).toEqual(["p-1 approve", "p-2 approve"]);
  });

  it("a decision the peer refuses is reported (its code, needs_direct_approval), never sent twice", async () => {
    const { peer } = await gatedPeer("relayed", { refuse: true });
    const app = await agentA(peer);
    const mine = await pausedAsk(app, "t-refused");
    const events = await decide(app, "t-refused", mine, "approve");
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(JSON.parse(toolResult(events).result)).toMatchObject({ state: "input-required", needs_direct_approval: true, error_code: "approval_digest_mismatch", approvals: [{ approval_id: "p-1" }] });
    expect(decisions(peer)).toHaveLength(1);
  });
});

describe("a direct rule at the peer", () => {
  it("asks nothing at A: the tool result is input-required with needs_direct_approval", async () => {
    const { peer } = await gatedPeer("direct");
    const app = await agentA(peer);
    const { events } = await chat(app, { message: ASK, thread_id: "t-direct" });
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(JSON.parse(toolResult(events).result)).toMatchObject({
      task_id: "task-1",
      state: "input-required",
      needs_direct_approval: true,
      approvals: [{ approval_id: "p-1", waits_for: "POST /pay on API bank", decide_with: "direct" }],
    });
    expect(await approvalsAt(app, "t-direct")).toEqual([]);
    expect(peer.rpc()).toHaveLength(1);
  });

  it("a relayed rule, but A's policy denies approve messages: reported like a direct one, nothing asked at A", async () => {
    const { peer } = await gatedPeer("relayed");
    const app = await agentA(peer, DENY_APPROVE);
    const { events } = await chat(app, { message: ASK, thread_id: "t-denied" });
    expect(JSON.parse(toolResult(events).result)).toMatchObject({ state: "input-required", needs_direct_approval: true, approvals: [{ approval_id: "p-1", decide_with: "relayed" }] });
    expect(await approvalsAt(app, "t-denied")).toEqual([]);
    expect(peer.rpc()).toHaveLength(1);
  });
});
