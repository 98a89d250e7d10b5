/**
 * The A2A client (CONTRACT 6): agent A's peer tools ask_/status_/cancel_<api>, driven by the fake
 * model, against real peers on 127.0.0.1: another instance of this service (B, served by
 * @hono/node-server), the @a2a-js/sdk reference server (1.0, streaming and not) and the SDK's 0.3
 * compat server. A's outbound fetch records what A sends, so "nothing was sent" is checked where
 * it leaves A.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ORIGIN_EXTENSION_URI } from "../../src/a2a/origin.js";
import { chat, get, KEY, makeApp, type SseEvent, type TestApp } from "../helpers.js";
import { handPeer, type Peer, PEER_CARD_PATH, PEER_PATH, peerPolicy, sdkPeer, v10Card } from "../support/a2a-peers.js";
import { createOrder, GATED, ordersPolicy } from "../support/orders.js";
import { served, type Served } from "../support/served.js";

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Record<string, any> | null;
}

const apps: TestApp[] = [];
let b: Served;
/** B with a gated orders API (a direct rule): its runs pause for the person at B. */
let bGated: Served;
let sdk10: Peer;
let sdk10plain: Peer;
let sdk03: Peer;
let sdk03plain: Peer;

beforeAll(async () => {
  b = await served((base) => makeApp({ APP_URL: base }));
  bGated = await served((base) => makeApp({ APP_URL: base, ORDERS_URL: "http://127.0.0.1:9" }, { tools: [createOrder], policyText: ordersPolicy() }));
  [sdk10, sdk10plain, sdk03, sdk03plain] = await Promise.all([
    sdkPeer({ version: "1.0", streaming: true }),
    sdkPeer({ version: "1.0", streaming: false }),
    sdkPeer({ version: "0.3", streaming: true }),
    sdkPeer({ version: "0.3", streaming: false }),
  ]);
});
afterAll(async () => {
  for (const a of apps) await a.close();
  await Promise.all([b?.close(), bGated?.close(), sdk10?.close(), sdk10plain?.close(), sdk03?.close(), sdk03plain?.close()]);
});

/** Agent A with `policy`, its outbound calls recorded in `sent` before they leave. */
async function agentA(policy: string, env: Record<string, string> = {}) {
  const sent: Sent[] = [];
  const spy: typeof fetch = async (input, init = {}) => {
    const body = typeof init.body === "string" ? (JSON.parse(init.body) as Record<string, any>) : null;
    sent.push({ method: init.method ?? "GET", url: String(input), headers: { ...(init.headers as Record<string, string>) }, body });
    return fetch(input, init);
  };
  const app = await makeApp({ PEER_TOKEN: KEY, ...env }, { policyText: policy, fetch: spy, tools: [] });
  apps.push(app);
  return { app, sent, rpc: () => sent.filter((s) => s.method === "POST").map((s) => s.body!) };
}

/** A's policy for B, a real instance of this service at /a2a/app. */
const bPolicy = (extra = "") => peerPolicy("b", "B_URL", "/a2a/app", extra);
const ask = (message: string, extra: Record<string, unknown> = {}) => `/call ask_b ${JSON.stringify({ message, ...extra })}`;

function toolResults(events: SseEvent[]): { result: string; is_error: boolean; name: string }[] {
  return events.filter((e) => e.event === "tool.result").map((e) => e.data as { result: string; is_error: boolean; name: string });
}
const firstResult = (events: SseEvent[]) => JSON.parse(toolResults(events)[0]!.result) as Record<string, any>;

describe("A asks B, another instance of this service", () => {
  it("ask_b: reads B's card, streams (B declares streaming) with the 1.0 wire, and returns B's completed task", async () => {
    const a = await agentA(bPolicy(), { B_URL: b.base });
    const { events } = await chat(a.app, { message: ask("hi"), thread_id: "t-ask" });
    const result = firstResult(events);
    expect(result).toMatchObject({ state: "completed", text: "echo: hi" });
    expect(result.task_id).toEqual(expect.any(String));
    // A UUID (version 8): a thread id on a peer under either runtime.
    expect(result.context_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    expect(a.sent.map((s) => `${s.method} ${new URL(s.url).pathname}`)).toEqual(["GET /a2a/app/.well-known/agent-card.json", "POST /a2a/app"]);
    const [call] = a.rpc();
    expect(a.sent[1]!.headers["a2a-version"]).toBe("1.0");
    expect(call).toMatchObject({ jsonrpc: "2.0", method: "SendStreamingMessage", params: { message: { role: "ROLE_USER", parts: [{ text: "hi" }], contextId: result.context_id } } });
    expect(call!.params.message.parts[0]).not.toHaveProperty("kind");

    // The context id is B's thread: the conversation is there, owned by A's credential at B.
    const messages = (await (await b.app.fetch(get(`/threads/${result.context_id}/messages`))).json()) as { role: string; content: string }[];
    expect(messages.map((m) => [m.role, m.content])).toEqual([["user", "hi"], ["assistant", "echo: hi"]]);
  });

  it("the context id is stable per thread: a second ask in the thread continues B's conversation; another thread gets another", async () => {
    const a = await agentA(bPolicy(), { B_URL: b.base });
    const first = firstResult((await chat(a.app, { message: ask("one"), thread_id: "t-stable" })).events);
    const second = firstResult((await chat(a.app, { message: ask("two"), thread_id: "t-stable" })).events);
    const other = firstResult((await chat(a.app, { message: ask("three"), thread_id: "t-other" })).events);
    expect(second.context_id).toBe(first.context_id);
    expect(other.context_id).not.toBe(first.context_id);
    expect(second.task_id).not.toBe(first.task_id);
    const messages = (await (await b.app.fetch(get(`/threads/${first.context_id}/messages`))).json()) as { content: string }[];
    expect(messages.map((m) => m.content)).toEqual(["one", "echo: one", "two", "echo: two"]);
  });

  it("status_b and cancel_b: GetTask reads the task; CancelTask of a finished task is a tool error naming the JSON-RPC code", async () => {
    const a = await agentA(bPolicy(), { B_URL: b.base });
    const asked = firstResult((await chat(a.app, { message: ask("status me") })).events);
    const { events } = await chat(a.app, { message: `/call status_b {"task_id":"${asked.task_id}"}\n/call cancel_b {"task_id":"${asked.task_id}"}` });
    const [status, cancel] = toolResults(events);
    expect(JSON.parse(status!.result)).toMatchObject({ task_id: asked.task_id, state: "completed", text: "echo: status me" });
    expect(cancel!.is_error).toBe(true);
    expect(cancel!.result).toMatch(/ApiCallError: .*JSON-RPC error -32002 \(task not cancelable\)/);
    // The two calls of one turn run in parallel.
    expect(a.rpc().map((c) => c.method).sort()).toEqual(["CancelTask", "GetTask", "SendStreamingMessage"]);
  });

  it("a reply longer than A2A_REPLY_MAX_CHARS is cut at that many code points and ends [truncated]", async () => {
    const a = await agentA(bPolicy(), { B_URL: b.base, A2A_REPLY_MAX_CHARS: "5" });
    const result = firstResult((await chat(a.app, { message: ask("/answer 😀😀😀😀😀😀😀 seven") })).events);
    expect(result.text).toBe("😀😀😀😀😀[truncated]");
    const short = await agentA(bPolicy(), { B_URL: b.base, A2A_REPLY_MAX_CHARS: "50" });
    expect(firstResult((await chat(short.app, { message: ask("/answer 😀😀😀😀😀😀😀 seven") })).events).text).toBe("😀😀😀😀😀😀😀 seven");
  });

  it("the origin extension: B's card declares it, so A forwards the user's words (capped) with hops; A2A_FORWARD_ORIGIN=off sends none", async () => {
    const message = ask("hello");
    const a = await agentA(bPolicy(), { B_URL: b.base, A2A_ORIGIN_MAX_CHARS: "8" });
    await chat(a.app, { message });
    const sent = a.rpc()[0]!.params.message;
    expect(sent.metadata).toEqual({ [ORIGIN_EXTENSION_URI]: { origin: { text: Array.from(message).slice(0, 8).join(""), truncated: true, hops: 1 } } });
    expect(sent.extensions).toEqual([ORIGIN_EXTENSION_URI]);

    const whole = await agentA(bPolicy(), { B_URL: b.base });
    await chat(whole.app, { message });
    expect(whole.rpc()[0]!.params.message.metadata[ORIGIN_EXTENSION_URI].origin).toEqual({ text: message, truncated: false, hops: 1 });

    const off = await agentA(bPolicy(), { B_URL: b.base, A2A_FORWARD_ORIGIN: "off" });
    await chat(off.app, { message });
    expect(off.rpc()[0]!.params.message).not.toHaveProperty("metadata");
  });

  it("B's run pauses for a direct rule at B: the streamed task is input-required, needs_direct_approval, nothing asked at A", async () => {
    const a = await agentA(bPolicy(), { B_URL: bGated.base });
    const { events } = await chat(a.app, { message: ask(GATED), thread_id: "t-gated" });
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(firstResult(events)).toMatchObject({
      state: "input-required",
      needs_direct_approval: true,
      approvals: [{ approval_id: expect.any(String), waits_for: "POST /orders on API orders", decide_with: "direct" }],
    });
    expect(a.rpc().map((c) => c.method)).toEqual(["SendStreamingMessage"]);
    expect(await (await a.app.fetch(get("/threads/t-gated/approvals"))).json()).toEqual([]);
  });

  it("the card is read once per A2A_CARD_TTL_S (A's clock), before every call with 0", async () => {
    const clock = { t: Date.now(), now: () => clock.t };
    const cardReads = (sent: Sent[]) => sent.filter((s) => s.method === "GET").length;
    const sent: Sent[] = [];
    const spy: typeof fetch = async (input, init = {}) => (sent.push({ method: init.method ?? "GET", url: String(input), headers: {}, body: null }), fetch(input, init));
    const a = await makeApp({ PEER_TOKEN: KEY, B_URL: b.base, A2A_CARD_TTL_S: "60" }, { policyText: bPolicy(), fetch: spy, tools: [], clock });
    apps.push(a);
    await chat(a, { message: ask("one") });
    await chat(a, { message: ask("two") });
    expect(cardReads(sent)).toBe(1);
    clock.t += 61_000;
    await chat(a, { message: ask("three") });
    expect(cardReads(sent)).toBe(2);

    const every = await agentA(bPolicy(), { B_URL: b.base, A2A_CARD_TTL_S: "0" });
    await chat(every.app, { message: ask("one") });
    await chat(every.app, { message: ask("two") });
    expect(cardReads(every.sent)).toBe(2);
  });

  it("streaming denied by the policy: A sends SendMessage though B's card declares streaming", async () => {
    const a = await agentA(bPolicy("    denied_operations: [{ rpc_method: SendStreamingMessage }]\n"), { B_URL: b.base });
    expect(firstResult((await chat(a.app, { message: ask("no stream") })).events)).toMatchObject({ state: "completed", text: "echo: no stream" });
    expect(a.rpc().map((c) => c.method)).toEqual(["SendMessage"]);
  });
});

describe("a bad card", () => {
  it("naming another host, or no JSON-RPC interface: the tool fails saying so and nothing else is sent", async () => {
    const cards = [(url: string) => v10Card(url.replace("127.0.0.1", "localhost")), (url: string) => ({ ...v10Card(url), supportedInterfaces: [{ url, protocolBinding: "GRPC", protocolVersion: "1.0" }] })];
    const reasons = [/card of agent hand names another endpoint than the one the policy sends to; nothing else was sent/, /card of agent hand names no JSON-RPC interface/];
    for (const [i, card] of cards.entries()) {
      const peer = await handPeer(() => ({ error: { code: -32603 } }), card);
      try {
        const a = await agentA(peerPolicy("hand", "HAND_URL", PEER_PATH), { HAND_URL: peer.base });
        const [result] = toolResults((await chat(a.app, { message: '/call ask_hand {"message":"hi"}' })).events);
        expect(result!.is_error).toBe(true);
        expect(result!.result).toMatch(reasons[i]!);
        expect(peer.hits.map((h) => `${h.method} ${h.url}`)).toEqual([`GET ${PEER_CARD_PATH}`]);
      } finally {
        await peer.close();
      }
    }
  });
});

describe("the tools follow the policy", () => {
  const only = (ops: string) => `    allowed_operations:\n      - { methods: [GET], path: /a2a/app/.well-known/agent-card.json }\n${ops}`;

  it("a tool whose method the policy never allows is not offered, and calling it sends nothing", async () => {
    const a = await agentA(bPolicy(only("      - { methods: [POST], rpc_method: SendMessage }\n")), { B_URL: b.base });
    const { events } = await chat(a.app, { message: '/call status_b {"task_id":"x"}\n/call cancel_b {"task_id":"x"}' });
    expect(toolResults(events).map((r) => r.result)).toEqual(['There is no tool named "status_b".', 'There is no tool named "cancel_b".']);
    expect(a.sent).toEqual([]);
    // ask_b is offered and sends SendMessage (streaming is not in the allow-list).
    expect(firstResult((await chat(a.app, { message: ask("allowed") })).events)).toMatchObject({ state: "completed" });
    expect(a.rpc().map((c) => c.method)).toEqual(["SendMessage"]);
  });

  it("denied_operations take tools away; a policy that refuses the card offers none", async () => {
    const denied = await agentA(bPolicy("    denied_operations: [{ rpc_method: CancelTask }, { rpc_method: GetTask }]\n"), { B_URL: b.base });
    const { events } = await chat(denied.app, { message: '/call cancel_b {"task_id":"x"}' });
    expect(toolResults(events)[0]!.result).toBe('There is no tool named "cancel_b".');
    expect(denied.sent).toEqual([]);

    const noCard = await agentA(bPolicy(only("      - { methods: [POST], rpc_method: SendMessage }\n").replace(/ {6}- \{ methods: \[GET\].*\n/, "")), { B_URL: b.base });
    expect(toolResults((await chat(noCard.app, { message: ask("x") })).events)[0]!.result).toBe('There is no tool named "ask_b".');
    expect(noCard.sent).toEqual([]);
  });

  it("a tool given to createApp with a peer tool's name stops startup naming it", async () => {
    const { defineTool } = await import("../../src/index.js");
    const clash = defineTool({ name: "ask_b", description: "mine", parameters: { type: "object" }, calls: [], run: () => "x" });
    await expect(makeApp({ PEER_TOKEN: KEY, B_URL: b.base }, { policyText: bPolicy(), tools: [clash] })).rejects.toThrow(/ask_b/);
  });
});

describe("A asks the @a2a-js/sdk reference server", () => {
  const sdkPolicy = peerPolicy("echo", "ECHO_URL", PEER_PATH);
  const askEcho = (text: string) => `/call ask_echo ${JSON.stringify({ message: text })}`;

  it("1.0 with streaming: SendStreamingMessage, the chunks folded into the reply", async () => {
    const a = await agentA(sdkPolicy, { ECHO_URL: sdk10.base });
    sdk10.hits.length = 0;
    const text = "a message long enough to come back in several chunks";
    const result = firstResult((await chat(a.app, { message: askEcho(text) })).events);
    expect(result).toMatchObject({ state: "completed", text: `echo: ${text}` });
    const [call] = sdk10.rpc();
    expect(call).toMatchObject({ method: "SendStreamingMessage", params: { message: { role: "ROLE_USER", parts: [{ text }] } } });
    expect(sdk10.hits.find((h) => h.url === PEER_PATH)!.headers["a2a-version"]).toBe("1.0");
    // The SDK's card declares no origin extension: nothing is forwarded.
    expect(call!.params.message).not.toHaveProperty("metadata");
  });

  it("1.0 without streaming: SendMessage; status_echo reads the task back", async () => {
    const a = await agentA(sdkPolicy, { ECHO_URL: sdk10plain.base });
    sdk10plain.hits.length = 0;
    const result = firstResult((await chat(a.app, { message: askEcho("plain") })).events);
    expect(result).toMatchObject({ state: "completed", text: "echo: plain" });
    const status = firstResult((await chat(a.app, { message: `/call status_echo {"task_id":"${result.task_id}"}` })).events);
    expect(status).toMatchObject({ task_id: result.task_id, state: "completed", text: "echo: plain" });
    expect(sdk10plain.rpc().map((c) => c.method)).toEqual(["SendMessage", "GetTask"]);
  });

  it("0.3 (the SDK's compat server behind a 0.3 card): 0.3 names, kind fields, role user, no version header", async () => {
    const a = await agentA(sdkPolicy, { ECHO_URL: sdk03.base });
    sdk03.hits.length = 0;
    const result = firstResult((await chat(a.app, { message: askEcho("old") })).events);
    expect(result).toMatchObject({ state: "completed", text: "echo: old" });
    const status = firstResult((await chat(a.app, { message: `/call status_echo {"task_id":"${result.task_id}"}` })).events);
    expect(status).toMatchObject({ state: "completed", text: "echo: old" });
    const [send, getTask] = sdk03.rpc();
    expect(send).toMatchObject({ method: "message/stream", params: { message: { kind: "message", role: "user", parts: [{ kind: "text", text: "old" }] } } });
    expect(getTask).toMatchObject({ method: "tasks/get", params: { id: result.task_id } });
    expect(sdk03.hits.filter((h) => h.url === PEER_PATH).every((h) => h.headers["a2a-version"] === undefined)).toBe(true);
    expect(sdk03.hits[0]).toMatchObject({ method: "GET", url: PEER_CARD_PATH });
  });

  it("0.3 without streaming: message/send asks to block (the SDK's 0.3 layer returns at once otherwise)", async () => {
    const a = await agentA(sdkPolicy, { ECHO_URL: sdk03plain.base });
    sdk03plain.hits.length = 0;
    expect(firstResult((await chat(a.app, { message: askEcho("wait for it") })).events)).toMatchObject({ state: "completed", text: "echo: wait for it" });
    expect(sdk03plain.rpc()).toEqual([expect.objectContaining({ method: "message/send", params: expect.objectContaining({ configuration: { blocking: true } }) })]);
  });
});
