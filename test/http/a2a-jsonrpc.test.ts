/**
 * A2A JSON-RPC by hand through app.fetch (spec 2.5, 3.3, 4.5, 5.6, 7.3; CONTRACT 5): the errors,
 * the version header, task transitions, ownership of tasks an agent started for its user, and
 * approvals decided over A2A, over HTTP and by expiry.
 */
import { createServer, type Server } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AuthError, type CustomAuthPolicy, type CustomPrincipal } from "../../src/index.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { chat, KEY, makeApp, parseSse, readUntil, type TestApp, waitFor } from "../helpers.js";
import { createOrder, GATED, ordersPolicy } from "../support/orders.js";

type Fetcher = { fetch(r: Request): Promise<Response> };
type Json = Record<string, any>;

const opened: TestApp[] = [];
afterEach(async () => {
  while (opened.length) await opened.pop()!.close();
});
async function open(env: Record<string, string> = {}, options: Parameters<typeof makeApp>[1] = {}) {
  const a = await makeApp(env, options);
  opened.push(a);
  return a;
}

interface RpcOpts {
  /** A2A-Version header; null leaves it out. Default 1.0. */
  v?: string | null;
  /** Bearer credential; default the shared key. */
  auth?: string;
  id?: string | number | null;
  agent?: string;
}

function rpcRequest(method: string, params: Json, o: RpcOpts = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${o.auth ?? KEY}`, "Content-Type": "application/json" };
  const v = o.v === undefined ? "1.0" : o.v;
  if (v !== null) headers["A2A-Version"] = v;
  return new Request(`http://test/a2a/${o.agent ?? "app"}`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: o.id === undefined ? 1 : o.id, method, params }) });
}

async function rpc(a: Fetcher, method: string, params: Json, o: RpcOpts = {}): Promise<Json> {
  const res = await a.fetch(rpcRequest(method, params, o));
  expect(res.status).toBe(200);
  return (await res.json()) as Json;
}

/** A streaming call read to its end: the JSON-RPC bodies of every SSE event. */
async function rpcStream(a: Fetcher, method: string, params: Json, o: RpcOpts = {}): Promise<any[]> {
  const res = await a.fetch(rpcRequest(method, params, o));
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return parseSse(await res.text()).map((e) => e.data);
}

let n = 0;
const message10 = (parts: Json[], extra: Json = {}) => ({ message: { messageId: `m-${++n}`, role: "ROLE_USER", parts, ...extra } });
const text10 = (text: string, extra: Json = {}) => message10([{ text }], extra);
const text03 = (text: string, extra: Json = {}) => ({ message: { kind: "message", messageId: `m-${++n}`, role: "user", parts: [{ kind: "text", text }], ...extra } });

/** SendMessage under 1.0; returns the task. */
async function send(a: Fetcher, text: string, o: RpcOpts = {}, extra: Json = {}): Promise<Json> {
  const body = await rpc(a, "SendMessage", text10(text, extra), o);
  expect(body.error).toBeUndefined();
  return body.result.task;
}
const getTask = (a: Fetcher, id: string, o: RpcOpts = {}) => rpc(a, "GetTask", { id }, o);
const listTasks = async (a: Fetcher, o: RpcOpts = {}, params: Json = {}) => (await rpc(a, "ListTasks", params, o)).result.tasks as Json[];
const statusData = (task: Json) => (task.status.message?.parts ?? []).filter((p: Json) => p.data !== undefined).map((p: Json) => p.data);
const statusText = (task: Json) => (task.status.message?.parts ?? []).filter((p: Json) => typeof p.text === "string").map((p: Json) => p.text).join("\n");
const artifactText = (task: Json) => (task.artifacts?.[0]?.parts ?? []).filter((p: Json) => typeof p.text === "string").map((p: Json) => p.text).join("");

// ---- loopback upstream and a gated tool (as in approvals.test.ts) ------------------------------

let upstream: Server;
let upstreamBase: string;
const hits: { method: string; url: string; body: string }[] = [];
beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      hits.push({ method: req.method!, url: req.url!, body });
      res.setHeader("content-type", "application/json");
      // An order for the item "slow" is answered after 300 ms, "slower" after 2.5 s.
      setTimeout(() => res.end(JSON.stringify({ created: true })), body.includes('"slow"') ? 300 : body.includes('"slower"') ? 2_500 : 0);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upstreamBase = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => upstream.close(() => r())));

const POLICY = (approvers = "[requester]") => ordersPolicy({ approvers, timeoutS: 60 });

// ---- custom auth: a user directly, through two agents, and strangers --------------------------

const agent = (id: string) => ({ id, chain: [], client: null });
const PRINCIPALS: Record<string, CustomPrincipal> = {
  user: { id: "alice" },
  agentA: { id: "alice", actor: agent("agent-a") },
  agentB: { id: "alice", actor: agent("agent-b") },
  other: { id: "bob" },
  approver: { id: "dave", roles: ["admin"] },
};
const authPolicy: CustomAuthPolicy = {
  authenticate(request) {
    const word = request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
    const p = PRINCIPALS[word];
    if (!p) throw new AuthError(401, "Invalid bearer token: unknown test word.");
    return p;
  },
};
const OWNERSHIP_ENV = { AUTH_ALLOWED_ACTORS: "agent-a,agent-b" };

// ===============================================================================================

describe("errors (spec 7.3)", () => {
  it("-32602 before a task is created: no text, an empty text part, over MAX_MESSAGE_CHARS", async () => {
    const a = await open();
    const bad = [
      message10([{ data: { a: 1 } }]),
      message10([]),
      message10([{ text: "" }]),
      message10([{ text: "hi" }, { text: "" }]),
      text10("x".repeat(32_001)),
    ];
    for (const params of bad) {
      const body = await rpc(a, "SendMessage", params, { id: "r1" });
      expect(body).toMatchObject({ jsonrpc: "2.0", id: "r1", error: { code: -32602 } });
      expect(body.result).toBeUndefined();
    }
    // The same refusals under 0.3 and on the streaming method.
    const b03 = await rpc(a, "message/send", { message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "" }] } }, { v: null });
    expect(b03.error.code).toBe(-32602);
    const res = await a.fetch(rpcRequest("SendStreamingMessage", message10([{ text: "" }])));
    expect(((await res.json()) as Json).error.code).toBe(-32602);
    // 32000 code points (emoji) is still within the limit.
    const ok = await send(a, "😀".repeat(32_000 - "echo: ".length));
    expect(ok.status.state).toBe("TASK_STATE_COMPLETED");
    expect(await listTasks(a)).toHaveLength(1);
  });

  it("a message of spaces only is 1 to MAX_MESSAGE_CHARS characters, as on /chat (spec 4.1): it runs", async () => {
    const a = await open();
    const task = await send(a, "   ");
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(task)).toBe("echo:    ");
    const chat = await a.fetch(new Request("http://test/chat", { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: JSON.stringify({ message: "   " }) }));
    expect(chat.status).toBe(200);
    await chat.text();
  });

  it("creates no task for an invalid message (ListTasks stays empty)", async () => {
    const a = await open();
    await rpc(a, "SendMessage", message10([{ text: "" }]));
    await rpc(a, "SendMessage", text10("y".repeat(32_001)));
    await rpc(a, "SendMessage", message10([{ data: { note: 1 } }]));
    expect(await listTasks(a)).toEqual([]);
    expect((await rpc(a, "tasks/list", {}, { v: "0.3" })).result.tasks).toEqual([]);
  });

  it("-32001 for an unknown task under both versions", async () => {
    const a = await open();
    expect(await getTask(a, "nope", { id: 3 })).toMatchObject({ id: 3, error: { code: -32001 } });
    expect(await rpc(a, "tasks/get", { id: "nope" }, { v: null, id: 4 })).toMatchObject({ id: 4, error: { code: -32001 } });
    expect((await rpc(a, "CancelTask", { id: "nope" })).error.code).toBe(-32001);
    expect((await rpc(a, "tasks/cancel", { id: "nope" }, { v: "0.3" })).error.code).toBe(-32001);
    expect((await rpc(a, "SubscribeToTask", { id: "nope" })).error.code).toBe(-32001);
    expect((await rpc(a, "SendMessage", text10("hi", { taskId: "nope" }))).error.code).toBe(-32001);
  });

  it("-32601 for a method unknown to the server (and for the other version's names)", async () => {
    const a = await open();
    expect(await rpc(a, "DoSomething", {}, { id: "x" })).toMatchObject({ jsonrpc: "2.0", id: "x", error: { code: -32601 } });
    expect((await rpc(a, "tasks/pushNotificationConfig/set", {}, { v: null })).error.code).toBe(-32601);
    expect((await rpc(a, "message/send", text03("hi"), { v: "1.0" })).error.code).toBe(-32601);
    expect((await rpc(a, "SendMessage", text10("hi"), { v: null })).error.code).toBe(-32601);
  });

  it("A2A-Version 2.0 is -32009 with the request id; absent, empty and 0.3.1 are 0.3; 1.0.2 is 1.0", async () => {
    const a = await open();
    for (const id of ["req-9", 9]) expect(await rpc(a, "SendMessage", text10("hi"), { v: "2.0", id })).toMatchObject({ jsonrpc: "2.0", id, error: { code: -32009 } });
    expect((await rpc(a, "message/send", text03("hi"), { v: "0.4" })).error.code).toBe(-32009);
    expect(await listTasks(a)).toEqual([]);

    for (const v of [null, "", "0.3", "0.3.1"]) {
      const body = await rpc(a, "message/send", text03(`v ${v}`), { v });
      expect(body.error).toBeUndefined();
      expect(body.result).toMatchObject({ kind: "task", status: { state: "completed" } });
      expect(body.result.artifacts[0].parts).toEqual([{ kind: "text", text: `echo: v ${v}` }]);
    }
    const body = await rpc(a, "SendMessage", text10("new"), { v: "1.0.2" });
    expect(body.result.task).toMatchObject({ status: { state: "TASK_STATE_COMPLETED" } });
    expect(body.result.task.kind).toBeUndefined();
    expect(body.result.task.artifacts[0].parts).toEqual([{ text: "echo: new" }]);
  });

  it("SubscribeToTask of a terminal task is -32004; CancelTask of a terminal task is -32002 (both versions)", async () => {
    const a = await open();
    const t = await send(a, "hi");
    expect(await rpc(a, "SubscribeToTask", { id: t.id }, { id: 5 })).toMatchObject({ id: 5, error: { code: -32004 } });
    expect((await rpc(a, "tasks/resubscribe", { id: t.id }, { v: null })).error.code).toBe(-32004);
    expect(await rpc(a, "CancelTask", { id: t.id }, { id: 6 })).toMatchObject({ id: 6, error: { code: -32002 } });
    expect((await rpc(a, "tasks/cancel", { id: t.id }, { v: null })).error.code).toBe(-32002);
  });
});

describe("task transitions (spec 3.3)", () => {
  it("working -> completed, streamed: snapshot working, artifact chunks, completed last", async () => {
    const a = await open();
    const events = await rpcStream(a, "SendStreamingMessage", text10("a streamed reply of some length"), { id: "s1" });
    expect(events.every((e) => e.jsonrpc === "2.0" && e.id === "s1")).toBe(true);
    expect(events[0].result.task.status.state).toBe("TASK_STATE_WORKING");
    const chunks = events.filter((e) => e.result.artifactUpdate).map((e) => e.result.artifactUpdate);
    expect(chunks.map((c) => c.artifact.parts[0].text).join("")).toBe("echo: a streamed reply of some length");
    expect(chunks.at(-1).lastChunk).toBe(true);
    expect(chunks[0].append).toBe(false);
    expect(chunks.slice(1).every((c) => c.append === true)).toBe(true);
    expect(events.at(-1).result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");

    const e03 = await rpcStream(a, "message/stream", text03("old stream"), { v: null });
    expect(e03[0].result).toMatchObject({ kind: "task", status: { state: "working" } });
    expect(e03.at(-1).result).toMatchObject({ kind: "status-update", status: { state: "completed" }, final: true });
  });

  it("streams through the shared SSE encoder: nameless frames of one JSON-RPC response each, keep-alive comments while idle", async () => {
    const a = await open({ SSE_HEARTBEAT_S: "1" });
    const res = await a.fetch(rpcRequest("SendStreamingMessage", text10("/sleep 1300\nquiet"), { id: "k" }));
    const text = await res.text();
    expect(text).toContain(": keep-alive\n\n");
    const frames = text.split("\n\n").filter((f) => f !== "" && !f.startsWith(":"));
    expect(frames.length).toBeGreaterThan(2);
    for (const f of frames) expect(f).toMatch(/^data: \{.*\}$/);
    expect(JSON.parse(frames.at(-1)!.slice("data: ".length)).result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("-> failed on /error with a data part {type: 'error', code: 'run_failed'}", async () => {
    const a = await open();
    const t = await send(a, "/error");
    expect(t.status.state).toBe("TASK_STATE_FAILED");
    expect(statusData(t)).toContainEqual({ type: "error", code: "run_failed" });
    expect((await getTask(a, t.id)).result.status.state).toBe("TASK_STATE_FAILED");
  });

  it("-> input-required for a gated call, with the approval_request data part and a text part naming the call", async () => {
    hits.length = 0;
    const a = await open({ ORDERS_URL: upstreamBase }, { policyText: POLICY(), tools: [createOrder] });
    const t = await send(a, GATED);
    expect(t.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const req = statusData(t).find((d: Json) => d.type === "approval_request");
    expect(req).toBeDefined();
    expect(req.approval).toMatchObject({ status: "pending", api: "orders", method: "POST", path: "/orders", thread_id: t.contextId, body: { item: "book" } });
    expect(req.approval.internal).toBeUndefined();
    expect(req.approvals).toHaveLength(1);
    expect(req.approvals[0].approval_id).toBe(req.approval.approval_id);
    expect(req.approval_json).toBe(JSON.stringify(req.approval));
    expect(JSON.parse(req.approval_json)).toEqual(req.approval);
    const text = statusText(t);
    expect(text).toContain("POST /orders");
    expect(text).toContain("orders");
    expect(text).toContain('{"item":"book"}');
    expect(text).toContain(req.approval.approval_id);
    expect(hits).toHaveLength(0);
    // The same under 0.3: lower-case state, data part with kind.
    const b03 = await rpc(a, "tasks/get", { id: t.id }, { v: null });
    expect(b03.result.status.state).toBe("input-required");
    expect(b03.result.status.message.parts.some((p: Json) => p.kind === "data" && p.data.type === "approval_request")).toBe(true);
  });

  it("canceled by its owner while running (the stream ends canceled)", async () => {
    const a = await open();
    const res = await a.fetch(rpcRequest("SendStreamingMessage", text10("/sleep 3000\nx"), { id: "c1" }));
    const { reader, events, text } = await readUntil(res, (ev) => ev.length >= 1);
    const id = events[0]!.data.result.task.id;
    const canceled = await rpc(a, "CancelTask", { id });
    expect(canceled.result.status.state).toBe("TASK_STATE_CANCELED");
    let rest = text;
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
    }
    expect(parseSse(rest).at(-1)!.data.result.statusUpdate.status.state).toBe("TASK_STATE_CANCELED");
    expect((await getTask(a, id)).result.status.state).toBe("TASK_STATE_CANCELED");
  });
});

describe("ownership (spec 5.6)", () => {
  const ownershipApp = () => open({ ...OWNERSHIP_ENV, ORDERS_URL: upstreamBase }, { authPolicy, policyText: POLICY("[requester, 'role:admin']"), tools: [createOrder] });

  it("a task agent-a started: the user reads, lists and cancels it; continuing it by taskId stays with the agent", async () => {
    const a = await ownershipApp();
    const t = await send(a, "from the agent", { auth: "agentA" });
    expect(t.status.state).toBe("TASK_STATE_COMPLETED");

    // The user, directly.
    expect((await getTask(a, t.id, { auth: "user" })).result.id).toBe(t.id);
    expect((await listTasks(a, { auth: "user" })).map((x) => x.id)).toContain(t.id);
    expect((await rpc(a, "SendMessage", text10("me too", { taskId: t.id }), { auth: "user" })).error.code).toBe(-32001);
    // The person continues by contextId.
    const byContext = await send(a, "me too", { auth: "user" }, { contextId: t.contextId });
    expect(byContext.contextId).toBe(t.contextId);
    expect(byContext.status.state).toBe("TASK_STATE_COMPLETED");

    // Another agent for the same user, and another user.
    for (const auth of ["agentB", "other"]) {
      expect((await getTask(a, t.id, { auth })).error.code).toBe(-32001);
      expect((await rpc(a, "tasks/get", { id: t.id }, { auth, v: null })).error.code).toBe(-32001);
      expect((await rpc(a, "CancelTask", { id: t.id }, { auth })).error.code).toBe(-32001);
      expect((await listTasks(a, { auth })).map((x) => x.id)).not.toContain(t.id);
      expect((await rpc(a, "SendMessage", text10("hijack", { taskId: t.id }), { auth })).error.code).toBe(-32001);
    }
    // agent-a sees its own task but not the user's direct one.
    const mine = (await listTasks(a, { auth: "agentA" })).map((x) => x.id);
    expect(mine).toContain(t.id);
    expect(mine).not.toContain(byContext.id);
  });

  it("the user cancels a running task agent-a started", async () => {
    const a = await ownershipApp();
    const res = await a.fetch(rpcRequest("SendStreamingMessage", text10("/sleep 3000\nx"), { auth: "agentA" }));
    const { reader, events } = await readUntil(res, (ev) => ev.length >= 1);
    const id = events[0]!.data.result.task.id;
    expect((await rpc(a, "CancelTask", { id }, { auth: "agentB" })).error.code).toBe(-32001);
    expect((await rpc(a, "SubscribeToTask", { id }, { auth: "user" })).error.code).toBe(-32001);
    const canceled = await rpc(a, "CancelTask", { id }, { auth: "user" });
    expect(canceled.result.status.state).toBe("TASK_STATE_CANCELED");
    while (!(await reader.read()).done);
    expect((await getTask(a, id, { auth: "agentA" })).result.status.state).toBe("TASK_STATE_CANCELED");
  });

  it("a role approver deciding over A2A gets a refused decision (not_an_approver); the approval stays pending", async () => {
    hits.length = 0;
    const a = await ownershipApp();
    const t = await send(a, GATED, { auth: "user" });
    expect(t.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const approval = statusData(t).find((d: Json) => d.type === "approval_request").approval;
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: approval.approval_id, decision: "approve", digest: approval.digest } }], { contextId: t.contextId }), { auth: "approver" });
    expect(body.error).toBeUndefined();
    const refused = body.result.task;
    expect(statusData(refused)).toContainEqual({ type: "error", code: "not_an_approver" });
    expect(hits).toHaveLength(0);
    const res = await a.fetch(new Request(`http://test/threads/${t.contextId}/approvals`, { headers: { Authorization: "Bearer user" } }));
    expect(((await res.json()) as any[])[0].status).toBe("pending");
    expect((await getTask(a, t.id, { auth: "user" })).result.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });
});

describe("ownership of contexts and decisions by delegated callers", () => {
  const ownershipApp = () => open({ ...OWNERSHIP_ENV, ORDERS_URL: upstreamBase }, { authPolicy, policyText: POLICY(), tools: [createOrder] });
  const approvalOf = (t: Json) => statusData(t).find((d: Json) => d.type === "approval_request").approval as Json;

  it("agent-b writing into agent-a's context gets a failed task (forbidden); the thread is untouched", async () => {
    const a = await ownershipApp();
    const t = await send(a, "from a", { auth: "agentA" });
    const b = await send(a, "from b", { auth: "agentB" }, { contextId: t.contextId });
    expect(b.status.state).toBe("TASK_STATE_FAILED");
    expect(statusData(b)).toContainEqual({ type: "error", code: "forbidden" });
    const res = await a.fetch(new Request(`http://test/threads/${t.contextId}/messages`, { headers: { Authorization: "Bearer agentA" } }));
    expect(((await res.json()) as Json[]).map((m) => m.content)).toEqual(["from a", "echo: from a"]);
  });

  it("agent-a deciding a direct-only approval over A2A: the task stays input-required with a note naming approval_direct_only", async () => {
    hits.length = 0;
    const a = await ownershipApp();
    const t = await send(a, GATED, { auth: "agentA" });
    const ap = approvalOf(t);
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { taskId: t.id }), { auth: "agentA" });
    const kept = body.result.task;
    expect(kept.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(statusData(kept)).toContainEqual({ type: "error", code: "approval_direct_only" });
    expect(hits).toHaveLength(0);
  });

  it("the user decides over A2A (by context) what agent-a's run asked; agent-a's waiting task takes the outcome", async () => {
    hits.length = 0;
    const a = await ownershipApp();
    const t = await send(a, GATED, { auth: "agentA" });
    const ap = approvalOf(t);
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { contextId: t.contextId }), { auth: "user" });
    expect(body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(hits).toHaveLength(1);
    await waitFor(async () => (await getTask(a, t.id, { auth: "agentA" })).result.status.state === "TASK_STATE_COMPLETED", 3000);
  });

  it("an origin with too many hops fails the task (delegation_too_deep)", async () => {
    const a = await ownershipApp();
    const t = await send(a, "hi", { auth: "agentA" }, { metadata: { "urn:agent-service:a2a:origin:v1": { origin: { text: "hello", truncated: false, hops: 4 } } } });
    expect(t.status.state).toBe("TASK_STATE_FAILED");
    expect(statusData(t)).toContainEqual({ type: "error", code: "delegation_too_deep" });
  });
});

describe("more wire behaviour", () => {
  it("a body that is not JSON is -32700 with id null", async () => {
    const a = await open();
    const res = await a.fetch(new Request("http://test/a2a/app", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" }, body: "{nope" }));
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
  });

  it("a message on a context whose run waits for approval fails with approval_pending", async () => {
    hits.length = 0;
    const a = await open({ ORDERS_URL: upstreamBase }, { policyText: POLICY(), tools: [createOrder] });
    const t = await send(a, GATED);
    const next = await send(a, "hello", {}, { contextId: t.contextId });
    expect(next.status.state).toBe("TASK_STATE_FAILED");
    expect(statusData(next)).toContainEqual({ type: "error", code: "approval_pending" });
  });

  it("SubscribeToTask of a running task: snapshot, live chunks, then the final state (completed)", async () => {
    const a = await open();
    const res = await a.fetch(rpcRequest("SendStreamingMessage", text10("/sleep 200\nsubscribe to me"), { id: "s" }));
    const { reader, events } = await readUntil(res, (ev) => ev.length >= 1);
    const id = events[0]!.data.result.task.id;
    const sub = await rpcStream(a, "SubscribeToTask", { id }, { id: "sub" });
    while (!(await reader.read()).done);
    expect(sub.every((e) => e.id === "sub")).toBe(true);
    expect(sub[0].result.task.id).toBe(id);
    expect(sub.filter((e) => e.result.artifactUpdate).map((e) => e.result.artifactUpdate.artifact.parts[0].text).join("")).toBe("echo: subscribe to me");
    expect(sub.at(-1)!.result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
  });
});

describe("approvals over A2A (spec 4.5)", () => {
  const approvalApp = (options: Parameters<typeof makeApp>[1] = {}) => {
    hits.length = 0;
    return open({ ORDERS_URL: upstreamBase }, { policyText: POLICY(), tools: [createOrder], ...options });
  };
  const approvalOf = (t: Json) => statusData(t).find((d: Json) => d.type === "approval_request").approval as Json;

  /**
   * A task whose decision is queued: another holder (a chat, a stalled replica) has the
   * conversation when the requester approves over A2A. `release` lets the conversation go.
   */
  async function queuedDecision() {
    let lease: ReturnType<typeof createMemoryLease> | undefined;
    const a = await approvalApp({
      sweepIntervalMs: 100,
      storage: async (_s, { clock }) => ({ store: createMemoryStore(), lease: (lease = createMemoryLease(clock)) }),
    });
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const held = (await lease!.acquire(t.contextId, "other:run", 10_000))!;
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { taskId: t.id }));
    expect(body.error).toBeUndefined();
    return { a, t, ap, queued: body.result.task as Json, release: () => lease!.release(held) };
  }

  it("a decision that finds the conversation held is queued: the task says so and stays working (not input-required with nothing to decide), then completes once the run resumes", async () => {
    const { a, t, ap, queued, release } = await queuedDecision();
    expect(queued.status.state).toBe("TASK_STATE_WORKING");
    expect(JSON.stringify(queued.status)).toContain(`The decision on approval ${ap.approval_id} is recorded`);
    expect(statusData(queued).some((d: Json) => d.type === "approval_request")).toBe(false);
    expect(hits).toHaveLength(0);
    await release();
    await waitFor(async () => (await getTask(a, t.id)).result.status.state === "TASK_STATE_COMPLETED", 5_000);
    expect(artifactText((await getTask(a, t.id)).result)).toContain("created");
    expect(hits).toHaveLength(1);
  });

  /**
   * A run waits on two create_order calls; the requester approves the first (`item`) in the web
   * page and, at the same moment, the second (a pen) over A2A on the task. The run the web page
   * resumes carries both out: the A2A decision's reply, and the task once it settles.
   */
  async function raceTwoDecisions(item: string) {
    const a = await approvalApp();
    const t = await send(a, `/call create_order {"item":"${item}"}\n/call create_order {"item":"pen"}`);
    const both = statusData(t).find((d: Json) => d.type === "approval_request").approvals as Json[];
    expect(both).toHaveLength(2);
    const [first, pen] = [both.find((x) => x.body.item === item)!, both.find((x) => x.body.item === "pen")!];
    const http = a.fetch(
      new Request(`http://test/threads/${t.contextId}/approvals/${first.approval_id}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ decision: "approve", digest: first.digest }),
      }),
    );
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: pen.approval_id, decision: "approve", digest: pen.digest } }], { taskId: t.id }));
    expect(body.error).toBeUndefined();
    const reply = body.result.task as Json;
    await (await http).text();
    await waitFor(async () => (await getTask(a, t.id)).result.status.state === "TASK_STATE_COMPLETED", 5_000);
    expect(artifactText((await getTask(a, t.id)).result)).toContain("created");
    expect(hits.filter((h) => h.body.includes(`"${item}"`))).toHaveLength(1);
    expect(hits.filter((h) => h.body.includes('"pen"'))).toHaveLength(1);
    return { reply, pen };
  }

  it("two approvals of one run, one decided over HTTP and the other over A2A at once: the run the first resumed carries both out and ends, and the A2A reply is its outcome (not input-required with nothing to decide)", async () => {
    // The call the web page's run sends first takes 300 ms: the A2A decision waits for the thread meanwhile.
    const { reply } = await raceTwoDecisions("slow");
    expect(reply.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(reply)).toContain("created");
  });

  it("...and when that run is still on the wire after the decision's wait, the A2A reply stays working and the task takes the run's outcome at its end", async () => {
    const { reply, pen } = await raceTwoDecisions("slower");
    expect(reply.status.state).toBe("TASK_STATE_WORKING");
    expect(JSON.stringify(reply.status)).toContain(`The decision on approval ${pen.approval_id} is recorded; the run resumes as soon as the conversation is free`);
    expect(statusData(reply).some((d: Json) => d.type === "approval_request")).toBe(false);
  });

  it("deciding on the task (taskId) sends the call once and the task completes", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { taskId: t.id }));
    expect(body.error).toBeUndefined();
    const done = body.result.task;
    expect(done.id).toBe(t.id);
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(done)).toContain("created");
    expect(hits).toHaveLength(1);
    expect(hits[0]).toMatchObject({ method: "POST", url: "/orders" });
    expect(JSON.parse(hits[0]!.body)).toEqual({ item: "book" });
    // Deciding again is refused; nothing more is sent.
    const again = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { contextId: t.contextId }));
    expect(again.result.task.status.state).toBe("TASK_STATE_FAILED");
    expect(statusData(again.result.task)).toContainEqual({ type: "error", code: "approval_not_pending" });
    // On the finished task itself, as any message to it: -32004, and the task stays completed.
    const onTask = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "reject" } }], { taskId: t.id }));
    expect(onTask.error?.code).toBe(-32004);
    expect((await getTask(a, t.id)).result.status.state).toBe("TASK_STATE_COMPLETED");
    expect(hits).toHaveLength(1);
  });

  it("deciding on the context as a new task (contextId + referenceTaskIds); the waiting task takes the outcome", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { contextId: t.contextId, referenceTaskIds: [t.id] }));
    const fresh = body.result.task;
    expect(fresh.id).not.toBe(t.id);
    expect(fresh.contextId).toBe(t.contextId);
    expect(fresh.status.state).toBe("TASK_STATE_COMPLETED");
    expect(hits).toHaveLength(1);
    await waitFor(async () => (await getTask(a, t.id)).result.status.state !== "TASK_STATE_INPUT_REQUIRED", 3000);
    const settled = (await getTask(a, t.id)).result;
    expect(settled.status.state).toBe("TASK_STATE_COMPLETED");
    // CONTRACT 5: the waiting task names the task where the run continued, not the run.
    expect(statusText(settled)).toBe(`Continued in task ${fresh.id}.`);
  });

  it("a reject over A2A sends nothing and the task completes with the model's answer", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "reject", comment: "no" } }], { taskId: t.id }));
    expect(body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(hits).toHaveLength(0);
  });

  it("a wrong digest is a refused decision; the task stays input-required with a note", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: `sha256:${"0".repeat(64)}` } }], { taskId: t.id }));
    const kept = body.result.task;
    expect(kept.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(statusData(kept)).toContainEqual({ type: "error", code: "approval_digest_mismatch" });
    expect(statusData(kept).some((d: Json) => d.type === "approval_request")).toBe(true);
    expect(hits).toHaveLength(0);
  });

  it("a comment over 1000 characters or with a control character (C0 or C1) other than newline and tab is -32602, as over HTTP (CONTRACT 5)", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    for (const comment of ["x".repeat(1001), "bell\u0007", "cr\r", "del\u007f", "nel\u0085", "c1\u009f", 7]) {
      const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "reject", comment } }], { taskId: t.id }));
      expect(body.error?.code, JSON.stringify(comment)).toBe(-32602);
    }
    const kept = (await getTask(a, t.id)).result;
    expect(kept.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    // Newline and tab are fine, and 1000 emoji are 1000 characters.
    const ok = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "reject", comment: `two\nlines\tand ${"😀".repeat(980)}` } }], { taskId: t.id }));
    expect(ok.error).toBeUndefined();
    expect(hits).toHaveLength(0);
  });

  it("a digest that is not sha256: + 64 lowercase hex is -32602 before any approval is looked at (CONTRACT 5)", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const before = (await listTasks(a)).length;
    const bad = [`sha256:${"A".repeat(64)}`, `sha256:${"0".repeat(63)}`, `sha256:${"0".repeat(65)}`, `md5:${"0".repeat(64)}`, "0".repeat(64), "", `sha256:${"g".repeat(64)}`];
    for (const digest of bad) {
      for (const extra of [{ taskId: t.id }, { contextId: t.contextId, referenceTaskIds: [t.id] }]) {
        const body = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest } }], extra));
        expect(body.error?.code, digest).toBe(-32602);
      }
      // Even for an approval that does not exist: the digest is read first.
      const unknown = await rpc(a, "SendMessage", message10([{ data: { approval_id: "no-such-approval", decision: "approve", digest } }], { taskId: t.id }));
      expect(unknown.error?.code, digest).toBe(-32602);
    }
    expect(await listTasks(a)).toHaveLength(before);
    const kept = (await getTask(a, t.id)).result;
    expect(kept.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(statusData(kept).some((d: Json) => d.type === "error")).toBe(false);
    expect(hits).toHaveLength(0);
    // The well-formed digest still decides.
    const ok = await rpc(a, "SendMessage", message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], { taskId: t.id }));
    expect(ok.result.task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("deciding over HTTP updates the waiting task to completed", async () => {
    const a = await approvalApp();
    const t = await send(a, GATED);
    const ap = approvalOf(t);
    const res = await a.fetch(
      new Request(`http://test/threads/${t.contextId}/approvals/${ap.approval_id}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ decision: "approve" }),
      }),
    );
    expect(res.status).toBe(200);
    await res.text();
    expect(hits).toHaveLength(1);
    await waitFor(async () => (await getTask(a, t.id)).result.status.state === "TASK_STATE_COMPLETED", 3000);
    const done = (await getTask(a, t.id)).result;
    expect(artifactText(done)).toContain("created");
    expect(statusText(done)).toMatch(/continued/);
  });

  it("expiry updates the waiting task", async () => {
    const clock = { t: Date.parse("2026-11-22T12:00:00Z"), now: () => clock.t };
    const a = await approvalApp({ clock, lease: createMemoryLease(clock), store: createMemoryStore(), sweepIntervalMs: 20 });
    const t = await send(a, GATED);
    expect(t.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    clock.t += 61_000;
    await waitFor(async () => (await getTask(a, t.id)).result.status.state !== "TASK_STATE_INPUT_REQUIRED", 3000);
    const after = (await getTask(a, t.id)).result;
    expect(after.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(after)).toMatch(/not approved/i);
    expect(hits).toHaveLength(0);
  });

  const twoCalls = async (a: TestApp) => {
    const t = await send(a, `${GATED}\n/call create_order {"item":"pen"}`);
    expect(t.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const req = statusData(t).find((d: Json) => d.type === "approval_request");
    expect(req.approvals).toHaveLength(2);
    return { t, first: req.approvals[0] as Json, second: req.approvals[1] as Json };
  };
  const decision = (ap: Json, extra: Json) => message10([{ data: { approval_id: ap.approval_id, decision: "approve", digest: ap.digest } }], extra);

  it("two parallel gated calls decided one by one on the task: the first decision sends its call and the task waits for the second, then completes; each call sent once", async () => {
    const a = await approvalApp();
    const { t, first, second } = await twoCalls(a);
    await rpc(a, "SendMessage", decision(first, { taskId: t.id }));
    const waiting = (await getTask(a, t.id)).result;
    expect(waiting.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(statusData(waiting).find((d: Json) => d.type === "approval_request").approvals.map((x: Json) => x.approval_id)).toEqual([second.approval_id]);
    expect(hits).toHaveLength(1);
    const body2 = await rpc(a, "SendMessage", decision(second, { taskId: t.id }));
    expect(body2.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(hits).toHaveLength(2);
  });

  // A decision that leaves other approvals of the run pending answers the task as stored.
  it("the reply to the first of two decisions reads input-required (not a stale working)", async () => {
    const a = await approvalApp();
    const { t, first } = await twoCalls(a);
    const body = await rpc(a, "SendMessage", decision(first, { taskId: t.id }));
    expect(body.result.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("a data part other than a decision is no message text: -32602", async () => {
    const a = await approvalApp();
    const body = await rpc(a, "SendMessage", message10([{ data: { decision: "approve" } }]));
    expect(body.error.code).toBe(-32602);
  });
});

describe("threads and tasks", () => {
  it("deleting the thread deletes its tasks", async () => {
    const a = await open();
    const t = await send(a, "hi");
    const t2 = await send(a, "again", {}, { contextId: t.contextId });
    const res = await a.fetch(new Request(`http://test/threads/${t.contextId}`, { method: "DELETE", headers: { Authorization: `Bearer ${KEY}` } }));
    expect(res.status).toBe(204);
    for (const id of [t.id, t2.id]) expect((await getTask(a, id)).error.code).toBe(-32001);
    expect(await listTasks(a)).toEqual([]);
  });

  it("a task's context is a chat thread /chat can continue", async () => {
    const a = await open();
    const t = await send(a, "hi");
    const { events } = await chat(a, { message: "more", thread_id: t.contextId });
    expect(events.at(-1)!.data.status).toBe("ok");
  });
});

describe("the card", () => {
  const SCHEMA = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false };

  it("is guarded: 401 without a key", async () => {
    const a = await open();
    const res = await a.fetch(new Request("http://test/a2a/app/.well-known/agent-card.json"));
    expect(res.status).toBe(401);
    const post = await a.fetch(new Request("http://test/a2a/app", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }));
    expect(post.status).toBe(401);
  });

  it("advertises JSONRPC 1.0, streaming, one chat skill, the origin extension and JSON output with a response schema", async () => {
    const a = await open({ APP_URL: "https://agents.example/" }, { responseSchema: SCHEMA });
    const res = await a.fetch(new Request("http://test/a2a/app/.well-known/agent-card.json", { headers: { Authorization: `Bearer ${KEY}` } }));
    expect(res.status).toBe(200);
    const card = (await res.json()) as Json;
    expect(card.supportedInterfaces[0]).toEqual({ url: "https://agents.example/a2a/app", protocolBinding: "JSONRPC", protocolVersion: "1.0" });
    expect(card.capabilities.streaming).toBe(true);
    expect(card.skills).toHaveLength(1);
    expect(card.skills[0].id).toBe("chat");
    expect(card.capabilities.extensions.map((e: Json) => e.uri)).toContain("urn:agent-service:a2a:origin:v1");
    expect(card.defaultOutputModes).toContain("application/json");
    expect(card.securitySchemes).toBeDefined();

    // With the schema, SendMessage adds a data part with the object.
    const t = await send(a, '/json {"answer":"yes"}');
    expect(t.status.state).toBe("TASK_STATE_COMPLETED");
    expect(t.artifacts[0].parts).toEqual([{ text: '{"answer":"yes"}' }, { data: { answer: "yes" }, mediaType: "application/json" }]);

    // Without a schema, no JSON output mode.
    const plain = await open();
    const card2 = (await (await plain.fetch(new Request("http://test/a2a/app/.well-known/agent-card.json", { headers: { Authorization: `Bearer ${KEY}` } }))).json()) as Json;
    expect(card2.defaultOutputModes).not.toContain("application/json");
  });

  it("without APP_URL names http://HOST:PORT on Node, whatever origin the request came to (spec 4.5)", async () => {
    const a = await open({ HOST: "::1", PORT: "8123" });
    const res = await a.fetch(new Request("http://elsewhere.example:9999/a2a/app/.well-known/agent-card.json", { headers: { Authorization: `Bearer ${KEY}` } }));
    expect(((await res.json()) as Json).supportedInterfaces[0].url).toBe("http://[::1]:8123/a2a/app");
  });

  it("A2A_NAME changes the mount path; other names are 404", async () => {
    const a = await open({ A2A_NAME: "helper", APP_URL: "http://127.0.0.1:9" });
    const auth = { Authorization: `Bearer ${KEY}` };
    const card = await a.fetch(new Request("http://test/a2a/helper/.well-known/agent-card.json", { headers: auth }));
    expect(card.status).toBe(200);
    expect(((await card.json()) as Json).supportedInterfaces[0].url).toBe("http://127.0.0.1:9/a2a/helper");
    expect((await rpc(a, "SendMessage", text10("hi"), { agent: "helper" })).result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect((await a.fetch(new Request("http://test/a2a/app/.well-known/agent-card.json", { headers: auth }))).status).toBe(404);
    expect((await a.fetch(rpcRequest("SendMessage", text10("hi")))).status).toBe(404);
  });
});
