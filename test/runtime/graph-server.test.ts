/**
 * The graph-server runtime (issue 19): the LangGraph.js Agent Server started in this process with
 * startServer() on 127.0.0.1 (its data directory a temp dir of its own), our graph, auth handler
 * and routes loaded from the built files that scripts/graph-server/langgraph.json names (npm test
 * builds them first). The HTTP acceptance cases of chat, threads and approvals run against both
 * runtimes; the rest are the server's own: its native API behind our auth policy.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CustomAuthPolicy } from "../../src/auth/custom.js";
import { AuthError } from "../../src/auth/custom.js";
import { defineTool } from "../../src/index.js";
import { answerText, parseSse, type SseEvent, waitFor } from "../helpers.js";
import postgres from "postgres";
import { dropSchemas, newSchemaName, TEST_DSN } from "../support/postgres.js";
import { recordingUpstream } from "../support/upstream.js";

// The server's own log lines (winston, read at import): errors only.
process.env.LOG_LEVEL = "error";

const DIST = resolve(process.env.GRAPHSERVER_TEST_DIST ?? "dist");
const upstream = recordingUpstream();
const hits = upstream.hits;

const POLICY = `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    allowed_methods: [GET, POST]
    approval:
      required_for: { methods: [POST] }
      approvers: [requester]
      timeout_s: 60
`;

const createOrder = defineTool({
  name: "create_order",
  description: "creates an order",
  parameters: { type: "object", properties: { item: { type: "string" } } },
  calls: [{ api: "orders", method: "POST", path: "/orders" }],
  run: async (args, ctx) => (await ctx.api.request("orders", { method: "POST", path: "/orders", body: { item: args.item ?? "book" } })).body,
});
const whoami = defineTool({
  name: "whoami",
  description: "the caller as tools see it",
  parameters: { type: "object", properties: {} },
  calls: [],
  run: async (_args, ctx) => ({ id: ctx.principal.id, roles: [...ctx.principal.roles], attributes: ctx.principal.attributes }),
});

/** Bearer tokens of three principals; alice carries a credential that must never be stored. */
const PRINCIPALS: Record<string, { id: string; roles?: string[]; attributes?: Record<string, unknown> }> = {
  "token-alice": { id: "alice", attributes: { team: "blue", credentials: { orders: "alice-secret-credential" } } },
  "token-bob": { id: "bob" },
  "token-root": { id: "root", roles: ["admin"] },
  // An agent presenting alice's request (delegated): its admin role must never administer.
  "token-planner": { id: "alice", roles: ["admin"], attributes: { team: "blue" }, actor: { id: "planner", chain: [], client: null } } as never,
};
const authPolicy: CustomAuthPolicy = {
  authenticate(request) {
    const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
    const p = token ? PRINCIPALS[token] : undefined;
    if (!p) throw new AuthError(401, token ? "Invalid bearer token: unknown." : "Missing bearer token.", { invalid: token !== undefined });
    return p as never;
  },
};

const ENV = () => ({
  AUTH_POLICY: "custom",
  AUTH_ADMIN_ROLES: "admin",
  AUTH_ALLOWED_ACTORS: "planner",
  MODEL_PROVIDER: "fake",
  MODEL_NAME: "fake",
  LOG_LEVEL: "ERROR",
  ORDERS_URL: upstream.base,
});

interface Runtime {
  fetch(path: string, init?: { method?: string; body?: unknown; as?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

function caller(send: (path: string, init: RequestInit) => Promise<Response>): Runtime["fetch"] {
  return (path, init = {}) => {
    const headers: Record<string, string> = { ...(init.as !== "" ? { authorization: `Bearer token-${init.as ?? "alice"}` } : {}), ...init.headers };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    return send(path, { method: init.method ?? (init.body !== undefined ? "POST" : "GET"), headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
  };
}

const logs: string[] = [];
const options = () => ({ env: ENV(), authPolicy, policyText: POLICY, tools: [createOrder, whoami], logWrite: (line: string) => void logs.push(line) });

async function standalone(): Promise<Runtime> {
  const { createApp } = (await import(pathToFileURL(join(DIST, "index.js")).href)) as typeof import("../../src/runtime/package.js");
  const app = await createApp(options());
  return { fetch: caller((path, init) => app.fetch(new Request(`http://127.0.0.1${path}`, init))), close: () => app.close() };
}

let dataDir = "";
async function graphServer(): Promise<Runtime & { url: string }> {
  const { startGraphServer } = (await import(pathToFileURL(join(DIST, "graph-server", "start.js")).href)) as typeof import("../../src/runtime/graph-server/start.js");
  dataDir = mkdtempSync(join(tmpdir(), "graph-server-test-"));
  const server = await startGraphServer({ ...options(), dataDir, hostname: "127.0.0.1", port: 0 });
  return { url: server.url, fetch: caller((path, init) => fetch(`${server.url}${path}`, init)), close: () => server.close() };
}

const events = async (res: Response) => parseSse(await res.text());
const names = (list: SseEvent[]) => list.map((e) => e.event).filter((n, i, all) => n !== "message.delta" || all[i - 1] !== "message.delta");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each([
  ["standalone", standalone],
  ["graph-server", graphServer],
] as const)("HTTP acceptance on %s", (runtime, start) => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await start();
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    if (runtime === "graph-server" && dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => void (hits.length = 0));

  const chat = async (body: Record<string, unknown>, as = "alice") => {
    const res = await rt.fetch("/chat", { body, as });
    return { res, events: res.status === 200 ? await events(res) : [], json: res.status === 200 ? undefined : await res.json() };
  };

  it("streams a chat and keeps the thread (UUID ids)", async () => {
    const first = await chat({ message: "hello" });
    expect(first.res.status).toBe(200);
    expect(names(first.events)).toEqual(["message.start", "message.delta", "message.end"]);
    const threadId = first.events[0]!.data.thread_id as string;
    expect(threadId).toMatch(UUID);
    expect(answerText(first.events)).toBe("echo: hello");
    expect(first.events.at(-1)!.data).toMatchObject({ thread_id: threadId, status: "ok", usage: { input_tokens: expect.any(Number), output_tokens: 3 } });

    const second = await chat({ message: "/call whoami {}", thread_id: threadId });
    expect(names(second.events)).toEqual(["message.start", "tool.call", "tool.result", "message.delta", "message.end"]);
    expect(JSON.parse(second.events[2]!.data.result as string)).toEqual({ id: "alice", roles: [], attributes: { team: "blue" } });

    const messages = await (await rt.fetch(`/threads/${threadId}/messages`)).json();
    expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user", "assistant", "tool", "assistant"]);
    const list = await (await rt.fetch("/threads")).json();
    expect(list[0]).toMatchObject({ thread_id: threadId });
    expect(await (await rt.fetch("/threads", { as: "bob" })).json()).not.toContainEqual(expect.objectContaining({ thread_id: threadId }));
  });

  it("refuses another principal and deletes for the owner", async () => {
    const threadId = (await chat({ message: "mine" })).events[0]!.data.thread_id as string;
    expect((await rt.fetch(`/threads/${threadId}/messages`, { as: "bob" })).status).toBe(403);
    expect((await chat({ message: "hi", thread_id: threadId }, "bob")).res.status).toBe(403);
    expect((await rt.fetch(`/threads/${threadId}`, { method: "DELETE", as: "bob" })).status).toBe(403);
    expect((await rt.fetch(`/threads/${threadId}`, { method: "DELETE" })).status).toBe(204);
    expect((await rt.fetch(`/threads/${threadId}/messages`)).status).toBe(404);
  });

  it("thread ids: any 1-128 characters standalone, UUIDs under graph-server (422 otherwise)", async () => {
    const named = await chat({ message: "hi", thread_id: "demo-1" });
    expect(named.res.status).toBe(runtime === "graph-server" ? 422 : 200);
    expect((await rt.fetch("/threads/demo-2", { method: "DELETE" })).status).toBe(runtime === "graph-server" ? 422 : 404);
  });

  it("A2A contextId is a thread id too: -32602 before any task when the runtime's threads cannot have it", async () => {
    const send = async (contextId: string) => {
      const res = await rt.fetch("/a2a/app", {
        body: { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: `m-${contextId}`, role: "ROLE_USER", parts: [{ text: "hi" }], contextId } } },
        headers: { "a2a-version": "1.0" },
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { result?: { task: { contextId: string; status: { state: string } } }; error?: { code: number; message: string } };
    };
    const named = await send("demo-ctx-1");
    if (runtime === "graph-server") {
      expect(named.error).toMatchObject({ code: -32602, message: "Invalid params: contextId must be a UUID (graph-server runtime)" });
      expect((await (await rt.fetch("/threads")).json()).map((t: { thread_id: string }) => t.thread_id)).not.toContain("demo-ctx-1");
    } else expect(named.result!.task).toMatchObject({ contextId: "demo-ctx-1", status: { state: "TASK_STATE_COMPLETED" } });
    expect((await send("bad context")).error).toMatchObject({ code: -32602 });
    expect((await send("x".repeat(129))).error).toMatchObject({ code: -32602 });
    const uuid = crypto.randomUUID();
    expect((await send(uuid)).result!.task).toMatchObject({ contextId: uuid, status: { state: "TASK_STATE_COMPLETED" } });
  });

  it("a gated call pauses; the approval route resumes it and sends exactly once", async () => {
    const paused = await chat({ message: '/call create_order {"item":"lamp"}' });
    const end = paused.events.at(-1)!.data;
    expect(end.status).toBe("awaiting_approval");
    const threadId = end.thread_id as string;
    const approvalId = end.approval.approval_id as string;
    expect(hits).toHaveLength(0);
    expect((await chat({ message: "again", thread_id: threadId })).json).toMatchObject({ code: "approval_pending" });
    expect((await rt.fetch(`/threads/${threadId}/approvals`)).status).toBe(200);

    const decided = await rt.fetch(`/threads/${threadId}/approvals/${approvalId}`, { body: { decision: "approve" } });
    expect(decided.status).toBe(200);
    const resumed = await events(decided);
    expect(resumed[0]).toMatchObject({ event: "message.start", data: { approval_id: approvalId, decision: "approve" } });
    expect(resumed.find((e) => e.event === "tool.result")!.data).toMatchObject({ name: "create_order", is_error: false });
    expect(resumed.at(-1)!.data.status).toBe("ok");
    expect(hits).toHaveLength(1);
    expect(JSON.parse(hits[0]!.body)).toEqual({ item: "lamp" });

    const again = await rt.fetch(`/threads/${threadId}/approvals/${approvalId}`, { body: { decision: "approve" } });
    expect(again.status).toBe(409);
    expect(hits).toHaveLength(1);
  });

  it("a rejected call sends nothing and the tool reads not approved; /approvals lists it for its requester only", async () => {
    const end = (await chat({ message: '/call create_order {"item":"vase"}' })).events.at(-1)!.data;
    const threadId = end.thread_id as string;
    const approvalId = end.approval.approval_id as string;
    const pending = await (await rt.fetch("/approvals?status=pending")).json();
    expect(pending.map((a: { approval_id: string }) => a.approval_id)).toContain(approvalId);
    expect((await (await rt.fetch("/approvals?status=pending", { as: "bob" })).json()).map((a: { approval_id: string }) => a.approval_id)).not.toContain(approvalId);
    expect((await rt.fetch(`/threads/${threadId}/approvals/${approvalId}`, { body: { decision: "reject", comment: "no" }, as: "bob" })).status).toBe(403);

    const resumed = await events(await rt.fetch(`/threads/${threadId}/approvals/${approvalId}`, { body: { decision: "reject", comment: "no" } }));
    expect(resumed.find((e) => e.event === "tool.result")!.data).toMatchObject({ name: "create_order", is_error: true, result: expect.stringContaining("not approved") });
    expect(resumed.at(-1)!.data.status).toBe("ok");
    expect(hits).toHaveLength(0);
    const rejected = await (await rt.fetch("/approvals?status=rejected")).json();
    expect(rejected.find((a: { approval_id: string }) => a.approval_id === approvalId)).toMatchObject({ status: "rejected", comment: "no" });
    // The thread goes on after the decision.
    expect((await chat({ message: "and now?", thread_id: threadId })).res.status).toBe(200);
  });
});

describe("the graph server's native API behind our auth policy", () => {
  let rt: Runtime & { url: string };
  beforeAll(async () => {
    rt = await graphServer();
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => void (hits.length = 0));

  const aliceThread = async (message = "hello") => {
    const res = await rt.fetch("/chat", { body: { message } });
    const list = await events(res);
    return { threadId: list[0]!.data.thread_id as string, end: list.at(-1)!.data };
  };
  const nativeRun = (threadId: string, body: Record<string, unknown>, as = "alice") =>
    rt.fetch(`/threads/${threadId}/runs/wait`, { body: { assistant_id: "agent", ...body }, as });

  it("leaves the probes open and refuses the studio scheme header", async () => {
    const health = await rt.fetch("/health", { as: "" });
    expect(health.status).toBe(200);
    // What persists: the server's threads and checkpoints; our rows in memory without DATABASE_URI.
    expect(await health.json()).toEqual({ status: "ok", runtime: "graph-server", checkpointer: "graph-server", run_store: "memory" });
    expect((await rt.fetch("/ready", { as: "" })).status).toBe(200);
    const { threadId } = await aliceThread();
    expect((await rt.fetch(`/threads/${threadId}`, { as: "", headers: { "x-auth-scheme": "langsmith" } })).status).toBe(401);
    expect((await rt.fetch("/threads/search", { body: {}, as: "", headers: { "x-auth-scheme": "langsmith" } })).status).toBe(401);
    expect((await rt.fetch(`/threads/${threadId}`, { as: "bob", headers: { "x-auth-scheme": "langsmith" } })).status).toBe(404);
    expect((await rt.fetch("/chat", { body: { message: "x" }, as: "" })).status).toBe(401);
    // A native route refuses as ours do: the JSON {detail} body, WWW-Authenticate, and a request id.
    for (const as of ["", "nobody"]) {
      const refused = await rt.fetch("/threads/search", { body: {}, as });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("content-type")).toMatch(/^application\/json/);
      expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
      expect(await refused.json()).toEqual({ detail: expect.any(String) });
    }
    const echoed = await rt.fetch("/assistants/search", { body: {}, as: "", headers: { "x-request-id": "req-native.1" } });
    expect([echoed.status, echoed.headers.get("x-request-id")]).toEqual([401, "req-native.1"]);
    // Every native answer carries X-Request-ID (spec 4), a valid one sent is echoed; ours keep theirs.
    const searched = await rt.fetch("/threads/search", { body: {} });
    expect(searched.status).toBe(200);
    expect(searched.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect((await rt.fetch("/threads/search", { body: {}, headers: { "x-request-id": "req-native.2" } })).headers.get("x-request-id")).toBe("req-native.2");
    expect((await rt.fetch("/threads/search", { body: {}, headers: { "x-request-id": "bad id" } })).headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect((await rt.fetch(`/threads/${threadId}/state`, { as: "bob" })).headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect((await rt.fetch("/threads", { headers: { "x-request-id": "req-own.3" } })).headers.get("x-request-id")).toBe("req-own.3");
    // CORS_ALLOWED_ORIGINS (none by default) holds for the native API too.
    const cross = await rt.fetch("/threads/search", { body: {}, headers: { origin: "https://elsewhere.example" } });
    expect(cross.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("answers only the caller's threads; another principal gets 404 or 403", async () => {
    const { threadId } = await aliceThread();
    const own = await (await rt.fetch("/threads/search", { body: { limit: 100 } })).json();
    expect(own.map((t: { thread_id: string }) => t.thread_id)).toContain(threadId);
    const bobs = await (await rt.fetch("/threads/search", { body: { limit: 100 }, as: "bob" })).json();
    expect(bobs.map((t: { thread_id: string }) => t.thread_id)).not.toContain(threadId);
    expect((await rt.fetch(`/threads/${threadId}`)).status).toBe(200);
    for (const path of [`/threads/${threadId}`, `/threads/${threadId}/state`, `/threads/${threadId}/history`])
      expect([403, 404]).toContain((await rt.fetch(path, { as: "bob" })).status);
    expect([403, 404]).toContain((await rt.fetch(`/threads/${threadId}/runs`, { as: "bob" })).status);
    expect([403, 404]).toContain((await nativeRun(threadId, { input: { messages: [{ role: "user", content: "hi" }] } }, "bob")).status);
    expect([403, 404]).toContain((await rt.fetch(`/threads/${threadId}`, { method: "PATCH", body: { metadata: { owner: "x" } }, as: "bob" })).status);
    // A thread bob makes natively is his, whatever metadata he sends.
    const made = await (await rt.fetch("/threads", { body: { metadata: { owner: "someone-else" } }, as: "bob" })).json();
    expect((await rt.fetch(`/threads/${made.thread_id as string}`, { as: "bob" })).status).toBe(200);
    expect((await rt.fetch(`/threads/${made.thread_id as string}`)).status).toBe(404);
  });

  it("runs our graph natively with the run context replaced by the caller's", async () => {
    const { threadId } = await aliceThread();
    const res = await nativeRun(threadId, {
      input: { messages: [{ role: "user", content: "/call whoami {}" }] },
      context: { user_id: "mallory" },
      config: { configurable: { agent_principal: { id: "mallory", roles: ["admin"], attributes: {}, actor: null }, user_id: "mallory" } },
    });
    expect(res.status).toBe(200);
    const state = await res.json();
    const tool = state.messages.find((m: { role: string }) => m.role === "tool");
    expect(JSON.parse(tool.content)).toEqual({ id: "alice", roles: [], attributes: { team: "blue" } });
    expect(state.messages.at(-1)).toMatchObject({ role: "assistant" });
    // The run's stored configuration names alice, never mallory, and never her credential.
    const runs = await (await rt.fetch(`/threads/${threadId}/runs`)).json();
    const stored = JSON.stringify(runs) + JSON.stringify(await (await rt.fetch(`/threads/${threadId}/history`)).json());
    expect(stored).not.toContain("mallory");
    expect(stored).not.toContain("alice-secret-credential");
    expect(stored).toContain('"user_id":"alice"');
    // Our own route reads what the native run wrote.
    const messages = await (await rt.fetch(`/threads/${threadId}/messages`)).json();
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: expect.stringContaining("done:") });
  });

  it("pages a thread whose native messages carry ids of their own: every Link it gives is followed", async () => {
    const { threadId } = await aliceThread();
    const ran = await nativeRun(threadId, { input: { messages: [{ id: "my msg/1", role: "user", content: "hi" }] } });
    expect(ran.status).toBe(200);
    // Read whole: the run's state is written by the time its answer ends.
    expect((await ran.json()).messages.map((m: { id: string }) => m.id)).toContain("my msg/1");
    const all = (await (await rt.fetch(`/threads/${threadId}/messages`)).json()) as { id: string }[];
    expect(all.map((m) => m.id)).toContain("my msg/1");
    const seen: string[] = [];
    let res = await rt.fetch(`/threads/${threadId}/messages?limit=1`);
    for (;;) {
      expect(res.status).toBe(200);
      seen.unshift(...((await res.json()) as { id: string }[]).map((m) => m.id));
      const prev = /<([^>]+)>; rel="prev"/.exec(res.headers.get("link") ?? "")?.[1];
      if (!prev) break;
      res = await rt.fetch(prev);
    }
    expect(seen).toEqual(all.map((m) => m.id));
  });

  it("refuses native runs on a thread with a pending approval, and resume or replay once it has approvals", async () => {
    const { threadId, end } = await aliceThread('/call create_order {"item":"desk"}');
    expect(end.status).toBe("awaiting_approval");
    expect((await nativeRun(threadId, { input: { messages: [{ role: "user", content: "hi" }] } })).status).toBe(403);
    expect((await nativeRun(threadId, { command: { resume: "approve" } })).status).toBe(403);
    expect((await rt.fetch(`/threads/${threadId}/copy`, { body: {} })).status).toBe(403);
    expect((await rt.fetch(`/threads/${threadId}/state`, { body: { values: { messages: [] } } })).status).toBe(403);
    expect(hits).toHaveLength(0);

    const decided = await rt.fetch(`/threads/${threadId}/approvals/${end.approval.approval_id as string}`, { body: { decision: "approve" } });
    expect((await events(decided)).at(-1)!.data.status).toBe("ok");
    expect(hits).toHaveLength(1);
    expect((await nativeRun(threadId, { command: { resume: "approve" } })).status).toBe(403);
    expect((await nativeRun(threadId, {})).status).toBe(403);
    expect((await nativeRun(threadId, { input: { messages: [{ role: "user", content: "thanks" }] } })).status).toBe(200);
    expect(hits).toHaveLength(1);
  });

  it("a native run stops with interrupt() at a gated call; our approval route resumes it and sends once", async () => {
    const made = await (await rt.fetch("/threads", { body: {} })).json();
    const threadId = made.thread_id as string;
    const res = await nativeRun(threadId, { input: { messages: [{ role: "user", content: '/call create_order {"item":"chair"}' }] } });
    expect(res.status).toBe(200);
    expect(hits).toHaveLength(0);
    // The server sets the thread's status as the run's last step, just after answering.
    await waitFor(async () => (await (await rt.fetch(`/threads/${threadId}`)).json()).status === "interrupted");
    const state = await (await rt.fetch(`/threads/${threadId}/state`)).json();
    expect(state.next).toEqual(["gate"]);
    expect(state.tasks[0].interrupts[0].value).toMatchObject({ type: "approval_request" });
    const approvals = await (await rt.fetch(`/threads/${threadId}/approvals`)).json();
    expect(approvals).toHaveLength(1);
    expect(approvals[0]).toMatchObject({ status: "pending", api: "orders", method: "POST" });

    const decided = await rt.fetch(`/threads/${threadId}/approvals/${approvals[0].approval_id as string}`, { body: { decision: "approve" } });
    const resumed = await events(decided);
    expect(resumed[0]).toMatchObject({ event: "message.start", data: { decision: "approve" } });
    expect(resumed.at(-1)!.data.status).toBe("ok");
    expect(hits).toHaveLength(1);
    expect(JSON.parse(hits[0]!.body)).toEqual({ item: "chair" });
    const messages = await (await rt.fetch(`/threads/${threadId}/messages`)).json();
    expect(messages.filter((m: { role: string }) => m.role === "tool")).toHaveLength(1);
  });

  it("a delegated caller: only threads its agent started, @actor in the run context, no admin by its roles", async () => {
    const { threadId: alices } = await aliceThread();
    // alice's own thread is not her agent's.
    expect((await rt.fetch(`/threads/${alices}`, { as: "planner" })).status).toBe(404);
    const search = await (await rt.fetch("/threads/search", { body: { limit: 100 }, as: "planner" })).json();
    expect(search.map((t: { thread_id: string }) => t.thread_id)).not.toContain(alices);
    // A thread the agent starts natively is the agent's, and alice, calling directly, reads it too.
    const made = await (await rt.fetch("/threads", { body: { metadata: { actor: "someone" } }, as: "planner" })).json();
    const threadId = made.thread_id as string;
    expect((await rt.fetch(`/threads/${threadId}`, { as: "planner" })).status).toBe(200);
    expect((await rt.fetch(`/threads/${threadId}`)).status).toBe(200);
    const res = await nativeRun(threadId, { input: { messages: [{ role: "user", content: "/call whoami {}" }] }, context: { user_id: "mallory" } }, "planner");
    expect(res.status).toBe(200);
    const tool = (await res.json()).messages.find((m: { role: string }) => m.role === "tool");
    expect(JSON.parse(tool.content)).toEqual({ id: "alice", roles: [], attributes: { team: "blue", "@actor": { id: "planner", chain: [], client: null } } });
    const stored = JSON.stringify(await (await rt.fetch(`/threads/${threadId}/runs`, { as: "planner" })).json());
    expect(stored).toContain('"@actor":{"id":"planner"');
    expect(stored).not.toContain("mallory");
    // Delegated roles never administer (spec 5.6).
    expect((await rt.fetch("/assistants", { body: { graph_id: "agent" }, as: "planner" })).status).toBe(403);
  });

  it("keeps assistants, crons and store writes to AUTH_ADMIN_ROLES; reads to any caller", async () => {
    expect((await rt.fetch("/assistants", { body: { graph_id: "agent" } })).status).toBe(403);
    expect((await rt.fetch("/assistants", { body: { graph_id: "agent" }, as: "root" })).status).toBe(200);
    expect((await rt.fetch("/assistants/search", { body: {} })).status).toBe(200);
    const item = { namespace: ["notes"], key: "k", value: { v: 1 } };
    expect((await rt.fetch("/store/items", { method: "PUT", body: item })).status).toBe(403);
    expect((await rt.fetch("/store/items", { method: "PUT", body: item, as: "root" })).status).toBe(204);
    expect((await rt.fetch("/store/items?namespace=notes&key=k")).status).toBe(200);
    // The local server has no crons at all; whatever it answers, alice gets none.
    expect((await rt.fetch("/runs/crons", { body: { assistant_id: "agent", schedule: "* * * * *" } })).status).toBeGreaterThanOrEqual(400);
  });

  it("our A2A client reaches an agent under graph-server (the contextId it derives is a UUID)", async () => {
    const { createApp } = (await import(pathToFileURL(join(DIST, "index.js")).href)) as typeof import("../../src/runtime/package.js");
    const policy = `
apis:
  peer:
    protocol: a2a
    a2a: { path: /a2a/app }
    base_url_env: PEER_URL
    auth: bearer
    token_env: PEER_TOKEN
    allowed_methods: [GET, POST]
    denied_operations: [{ a2a_operation: approve }]
`;
    const caller = await createApp({ env: { API_KEY: "k", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "ERROR", PEER_URL: rt.url, PEER_TOKEN: "token-alice" }, policyText: policy, tools: [], logWrite: () => {} });
    try {
      const ask = (message: string, thread: string) =>
        caller.fetch(new Request("http://caller/chat", { method: "POST", headers: { authorization: "Bearer k", "content-type": "application/json" }, body: JSON.stringify({ message: `/call ask_peer ${JSON.stringify({ message })}`, thread_id: thread }) }));
      const first = (await events(await ask("hello peer", "caller-1"))).find((e) => e.event === "tool.result")!.data;
      expect(first.is_error, first.result as string).toBe(false);
      const result = JSON.parse(first.result as string);
      expect(result).toMatchObject({ state: "completed", text: "echo: hello peer" });
      expect(result.context_id).toMatch(UUID);
      // The context is the peer's thread, alice's there; the same caller thread continues it.
      const again = JSON.parse((await events(await ask("again", "caller-1"))).find((e) => e.event === "tool.result")!.data.result as string);
      expect(again.context_id).toBe(result.context_id);
      const messages = await (await rt.fetch(`/threads/${result.context_id as string}/messages`)).json();
      expect(messages.filter((m: { role: string }) => m.role === "user").map((m: { content: string }) => m.content)).toEqual(["hello peer", "again"]);
    } finally {
      await caller.close();
    }
  });

  it("deletes a thread through the server's route, then ours", async () => {
    const { threadId } = await aliceThread();
    expect((await rt.fetch(`/threads/${threadId}`, { method: "DELETE", as: "bob" })).status).toBe(403);
    expect((await rt.fetch(`/threads/${threadId}`, { method: "DELETE" })).status).toBe(204);
    expect((await rt.fetch(`/threads/${threadId}`)).status).toBe(404);
    expect((await rt.fetch(`/threads/${threadId}/messages`)).status).toBe(404);
  });
});

describe("RUNTIME, and what graph-server refuses at startup", () => {
  it("is forced by RUNTIME, else detected from the server's environment", async () => {
    const { parseSettings } = await import("../../src/settings/parse.js");
    expect(parseSettings({}).runtime).toBe("standalone");
    expect(parseSettings({ RUNTIME: "graph-server" }).runtime).toBe("graph-server");
    expect(parseSettings({ LANGGRAPH_API_URL: "http://127.0.0.1:2024" }).runtime).toBe("graph-server");
    expect(parseSettings({ LANGSMITH_LANGGRAPH_API_VARIANT: "local_dev" }).runtime).toBe("graph-server");
    expect(parseSettings({ RUNTIME: "standalone", LANGGRAPH_API_URL: "http://127.0.0.1:2024" }).runtime).toBe("standalone");
    expect(() => parseSettings({ RUNTIME: "other" })).toThrow(/RUNTIME/);
  });

  it("needs the server's storage, and stops on forward or exchange APIs even under dev", async () => {
    const { createApp } = await import("../../src/index.js");
    const env = { API_KEY: "k", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "ERROR" };
    await expect(createApp({ env: { ...env, RUNTIME: "graph-server" }, logWrite: () => {} })).rejects.toMatchObject({ code: "configuration" });
    const forward = "apis:\n  crm:\n    base_url_env: CRM_URL\n    auth: forward\n    allowed_methods: [GET]\n";
    const { composeHost } = await import("../../src/runtime/graph-server/host.js");
    await expect(composeHost({ env: { ...env, APP_ENV: "dev", AUTH_POLICY: "custom", CRM_URL: "https://crm.example" }, authPolicy, policyText: forward, logWrite: () => {} })).rejects.toThrow(/RUNTIME graph-server/);
  });
});

describe("DATABASE_URI: our tables in the server's PostgreSQL, under a schema of their own", () => {
  const schema = newSchemaName("gs");
  let server: Awaited<ReturnType<typeof import("../../src/runtime/graph-server/start.js").startGraphServer>> | undefined;
  const dir = mkdtempSync(join(tmpdir(), "graph-server-pg-"));
  afterAll(async () => {
    await server?.close();
    await dropSchemas([schema]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps run records and approvals there (the local PostgreSQL at 127.0.0.1:5432)", async () => {
    const { startGraphServer } = (await import(pathToFileURL(join(DIST, "graph-server", "start.js")).href)) as typeof import("../../src/runtime/graph-server/start.js");
    server = await startGraphServer({ ...options(), env: { ...ENV(), DATABASE_URI: TEST_DSN }, schema, dataDir: dir });
    const res = await fetch(`${server.url}/chat`, { method: "POST", headers: { authorization: "Bearer token-alice", "content-type": "application/json" }, body: JSON.stringify({ message: '/call create_order {"item":"pen"}' }) });
    const end = (await events(res)).at(-1)!.data;
    expect(end.status).toBe("awaiting_approval");
    const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
    try {
      const [approvals] = await sql.unsafe(`SELECT count(*)::int AS n FROM "${schema}".approvals WHERE thread_id = $1`, [end.thread_id as string]);
      const [runs] = await sql.unsafe(`SELECT count(*)::int AS n FROM "${schema}".runs WHERE thread_id = $1`, [end.thread_id as string]);
      expect(approvals!.n).toBe(1);
      expect(runs!.n).toBe(1);
    } finally {
      await sql.end();
    }
    expect((await fetch(`${server.url}/ready`)).status).toBe(200);
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: "ok", runtime: "graph-server", checkpointer: "graph-server", run_store: "sql" });
  });
});
