/**
 * The policy client end to end (spec 2.6, 7.4, 8; CONTRACT 2, 5): tools made with defineTool call
 * `ctx.api.request`, driven by the fake model's `/call` lines, against a loopback upstream that
 * records every request it receives. Every refusal asserts its reason AND that the upstream got
 * nothing; every sent call asserts exactly what arrived on the wire. Each run must still end with
 * `message.end` (a refused or failed call is a tool result, never a failed run).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createApprovalGate, PauseBook } from "../../src/approvals/gate.js";
import { createPrincipalHasher } from "../../src/auth/hashing.js";
import type { Principal } from "../../src/auth/principal.js";
import { systemClock } from "../../src/clock.js";
import { type ApprovalGate, ApiPolicyError, defineTool, loadPolicy, type Tool } from "../../src/index.js";
import { randomIds } from "../../src/ids.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { createTracing, type Tracing } from "../../src/observability/tracing.js";
import { createPolicyClient } from "../../src/policy/client.js";
import { ANSWER_CEILING } from "../../src/policy/wire.js";
import { buildLabelIndex } from "../../src/policy/labels.js";
import type { ApiRequest } from "../../src/policy/types.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import { chat, makeApp, type SseEvent, type TestApp } from "../helpers.js";

// ---------------------------------------------------------------------------------------------
// The loopback upstream
// ---------------------------------------------------------------------------------------------

interface Seen {
  method: string;
  /** The raw request target, exactly as it arrived. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}
type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

let server: Server;
let origin: string;
const seen: Seen[] = [];
const routes = new Map<string, Handler>();
const timers = new Set<NodeJS.Timeout>();

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(value));
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const path = (req.url ?? "").split("?")[0]!;
      const handler = routes.get(path);
      if (handler) handler(req, res, body);
      else json(res, 200, { ok: true, path });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

let app: TestApp | undefined;
beforeEach(() => {
  seen.length = 0;
  routes.clear();
});
afterEach(async () => {
  for (const t of timers) clearInterval(t);
  timers.clear();
  await app?.close();
  app = undefined;
});

// ---------------------------------------------------------------------------------------------
// The app, its tools and policies
// ---------------------------------------------------------------------------------------------

/** Passes `{api, req}` straight to the policy client and returns the answer. */
const req = defineTool({
  name: "req",
  description: "Sends one outbound call through the policy client.",
  parameters: { type: "object", properties: { api: { type: "string" }, req: { type: "object" } }, required: ["api", "req"] },
  calls: [],
  run: (args, ctx) => ctx.api.request(args.api as string, args.req as unknown as ApiRequest) as never,
});

/** A tool that builds a body JSON cannot carry as it is (only code can; model input is always JSON). */
const oddBody = defineTool({
  name: "odd_body",
  description: "Sends a JSON-RPC request whose body is not plain JSON.",
  parameters: { type: "object", properties: { kind: { type: "string" } }, required: ["kind"] },
  calls: [],
  run: (args, ctx) => {
    const params: Record<string, unknown> = {};
    if (args.kind === "date") params.when = new Date(0);
    if (args.kind === "nan") params.n = Number.NaN;
    if (args.kind === "map") params.m = new Map([["a", 1]]);
    if (args.kind === "undefined") params.u = undefined;
    return ctx.api.request("rpc", { method: "POST", path: "/rpc", body: { jsonrpc: "2.0", method: "ping", id: 1, params } as never }) as never;
  },
});

const TOKEN = "svc-secret-token";

type ApiSettings = Record<string, unknown>;
const svc = (settings: ApiSettings = {}): ApiSettings => ({ base_url_env: "SVC_URL", auth: "none", allowed_methods: ["*"], ...settings });
const policyOf = (apis: Record<string, ApiSettings>) => JSON.stringify({ apis });
/** Another agent over A2A with a bearer token; approve messages denied. */
const a2aPeer = (urlEnv = "PEER_URL"): ApiSettings => ({
  base_url_env: urlEnv,
  auth: "bearer",
  token_env: "PEER_TOKEN",
  protocol: "a2a",
  a2a: { path: "/a2a" },
  allowed_methods: ["POST"],
  denied_operations: [{ a2a_operation: "approve" }],
});

async function start(apis: Record<string, ApiSettings>, options: { tools?: Tool[]; env?: Record<string, string>; intervalJobs?: boolean } = {}) {
  app = await makeApp(
    { SVC_URL: `${origin}/v1`, SVC_TOKEN: TOKEN, RPC_URL: origin, PEER_URL: origin, PEER_TOKEN: "peer-token", ...options.env },
    { policyText: policyOf(apis), tools: [req, oddBody, ...(options.tools ?? [])], ...(options.intervalJobs === undefined ? {} : { intervalJobs: options.intervalJobs }) },
  );
  return app;
}

type Call = { api?: string } & Record<string, unknown>;
/** One `/call req` line per call; turns separated by `/step`. */
const script = (turns: Call[][]) =>
  turns.map((turn) => turn.map(({ api = "svc", ...request }) => `/call req ${JSON.stringify({ api, req: request })}`).join("\n")).join("\n/step\n");

interface ToolResult {
  result: string;
  is_error: boolean;
  error_id?: string;
}

/** Runs the calls (each inner list one turn) and returns the tool results in order. The run must end normally. */
async function runCalls(...turns: Call[][]): Promise<{ results: ToolResult[]; events: SseEvent[] }> {
  return runMessage(script(turns));
}

async function runMessage(message: string): Promise<{ results: ToolResult[]; events: SseEvent[] }> {
  const { res, events } = await chat(app!, { message });
  expect(res.status).toBe(200);
  expect(events.at(-1)?.event).toBe("message.end");
  expect(events.at(-1)?.data.status).toBe("ok");
  return { results: events.filter((e) => e.event === "tool.result").map((e) => e.data as ToolResult), events };
}

/** One call in one run: its tool result. */
async function one(call: Call): Promise<ToolResult> {
  const { results } = await runCalls([call]);
  expect(results).toHaveLength(1);
  return results[0]!;
}

/** Asserts a policy refusal with its reason, and that the upstream received nothing. */
function expectRefused(r: ToolResult, reason: RegExp | string) {
  expect(r.is_error).toBe(true);
  expect(r.result).toMatch(/^ApiPolicyError: /);
  if (typeof reason === "string") expect(r.result).toContain(reason);
  else expect(r.result).toMatch(reason);
  expect(r.error_id).toMatch(/^[0-9a-f]{16}$/);
  expect(seen).toEqual([]);
}

function expectCallError(r: ToolResult, reason: RegExp) {
  expect(r.is_error).toBe(true);
  expect(r.result).toMatch(/^ApiCallError: /);
  expect(r.result).toMatch(reason);
}

/** A request target with escapes of unreserved characters decoded (the client may send either spelling). */
const norm = (url: string) =>
  url.replace(/%([0-9A-Fa-f]{2})/g, (m, h: string) => {
    const ch = String.fromCharCode(parseInt(h, 16));
    return /[A-Za-z0-9\-._~]/.test(ch) ? ch : m.toUpperCase();
  });

function answer(r: ToolResult): { status: number; headers: Record<string, string>; body: unknown } {
  expect(r.is_error, r.result).toBe(false);
  return JSON.parse(r.result);
}

// ---------------------------------------------------------------------------------------------
// Refusals (spec 7.4): the reason, and nothing sent
// ---------------------------------------------------------------------------------------------

describe("refusals: method and operations", () => {
  it("refuses a method not in allowed_methods", async () => {
    await start({ svc: svc({ allowed_methods: ["GET"] }) });
    expectRefused(await one({ method: "POST", path: "/users", body: {} }), "method POST is not in allowed_methods of API svc; nothing was sent");
    expectRefused(await one({ method: "delete", path: "/users" }), "method DELETE is not in allowed_methods");
  });

  it("refuses read-only shorthand writes and a method the policy does not know", async () => {
    await start({ svc: svc({ allowed_methods: "read-only" }) });
    expectRefused(await one({ method: "PUT", path: "/x", body: {} }), "method PUT is not in allowed_methods");
    expectRefused(await one({ method: "TRACE", path: "/x" }), "not an HTTP method the policy knows");
  });

  describe("denied_operations", () => {
    const denied = () => start({ svc: svc({ denied_operations: [{ path: "/admin" }, { path: "/users/{id}/secrets", methods: ["GET"] }] }) });

    it.each([
      ["/admin"],
      ["/ADMIN"],
      ["/Admin"],
      ["/admin.json"],
      ["/ADMIN.JSON"],
      ["/admin."],
      ["/%61dmin"],
      ["/%61DMIN"],
      ["/%41dmin"],
      ["/adm%69n"],
      ["/admin%2Ejson"],
      ["/admin/"],
      ["/%61dmin/"],
    ])("refuses %s", async (path) => {
      await denied();
      expectRefused(await one({ method: "GET", path }), "the call is denied by denied_operations of API svc; nothing was sent");
    });

    it("covers a denial with a placeholder, whatever the label, within its methods only", async () => {
      await denied();
      expectRefused(await one({ method: "GET", path: "/users/{id}/secrets", pathParams: { id: "7" }, operationId: "harmless" }), "denied by denied_operations");
      expectRefused(await one({ method: "GET", path: "/USERS/7/Secrets.txt" }), "denied by denied_operations");
      answer(await one({ method: "DELETE", path: "/users/7/secrets" }));
      expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["DELETE /v1/users/7/secrets"]);
    });

    it("does not deny a different segment that only starts with the literal", async () => {
      await denied();
      answer(await one({ method: "GET", path: "/administrators" }));
      expect(seen.map((s) => s.url)).toEqual(["/v1/administrators"]);
    });

    it("covers a call without a label when the denial knows the operation only by its operationId (fails closed)", async () => {
      await start({ svc: svc({ denied_operations: [{ operationId: "dropAll", methods: ["DELETE"] }] }) });
      expectRefused(await one({ method: "DELETE", path: "/anything" }), "denied by denied_operations");
      expectRefused(await one({ method: "DELETE", path: "/anything", operationId: "dropAll" }), "denied by denied_operations");
      answer(await one({ method: "DELETE", path: "/anything", operationId: "other" }));
      expect(seen).toHaveLength(1);
    });
  });

  it("refuses a call that matches no allowed_operations entry (allows are exact: no case or dot-suffix variants)", async () => {
    await start({ svc: svc({ allowed_operations: [{ path: "/users/{id}", methods: ["GET"] }, { operationId: "listUsers", path: "/users" }] }) });
    for (const call of [
      { method: "GET", path: "/orders" },
      { method: "POST", path: "/users/1", body: {} },
      { method: "GET", path: "/USERS/1" },
      { method: "GET", path: "/users.json/1" },
      { method: "GET", path: "/users" }, // the entry pins operationId listUsers; a call that names none does not match
      { method: "GET", path: "/users/1/2" },
    ])
      expectRefused(await one(call), "the call is not in allowed_operations of API svc; nothing was sent");
    answer(await one({ method: "GET", path: "/users", operationId: "listUsers" }));
    answer(await one({ method: "GET", path: "/%75sers/1/" }));
    expect(seen.map((s) => norm(s.url))).toEqual(["/v1/users", "/v1/users/1/"]);
  });

  it("refuses an operation_id label that does not match the request sent", async () => {
    await start({ svc: svc({ allowed_operations: [{ operationId: "getUser", path: "/users/{id}", methods: ["GET"] }, { path: "/other" }] }) });
    expectRefused(await one({ method: "GET", path: "/other", operationId: "getUser" }), "operation_id getUser does not match the request sent; nothing was sent");
    answer(await one({ method: "GET", path: "/users/{id}", pathParams: { id: 5 }, operationId: "getUser" }));
    expect(seen.map((s) => s.url)).toEqual(["/v1/users/5"]);
  });
});

describe("refusals: limits (counted last, per run and per process)", () => {
  it("refuses the second call of a run over max_calls_per_run; the first was sent; a new run starts again", async () => {
    await start({ svc: svc({ limits: { max_calls_per_run: 1 } }) });
    const { results } = await runCalls([{ method: "GET", path: "/one" }], [{ method: "GET", path: "/two" }]);
    answer(results[0]!);
    expect(results[1]!.is_error).toBe(true);
    expect(results[1]!.result).toBe("ApiPolicyError: this run already made 1 calls to API svc (limits.max_calls_per_run); nothing was sent");
    expect(seen.map((s) => s.url)).toEqual(["/v1/one"]);
    answer(await one({ method: "GET", path: "/three" }));
    expect(seen.map((s) => s.url)).toEqual(["/v1/one", "/v1/three"]);
  });

  it("does not count a refused call against max_calls_per_run", async () => {
    await start({ svc: svc({ limits: { max_calls_per_run: 1 }, denied_operations: [{ path: "/admin" }] }) });
    const { results } = await runCalls([{ method: "GET", path: "/admin" }], [{ method: "GET", path: "/ok" }]);
    expect(results[0]!.result).toMatch(/denied by denied_operations/);
    answer(results[1]!);
    expect(seen.map((s) => s.url)).toEqual(["/v1/ok"]);
  });

  it("refuses a call once the rate_per_minute bucket is empty, across runs", async () => {
    await start({ svc: svc({ limits: { rate_per_minute: 2 } }) });
    const { results } = await runCalls([{ method: "GET", path: "/a" }], [{ method: "GET", path: "/b" }], [{ method: "GET", path: "/c" }]);
    answer(results[0]!);
    answer(results[1]!);
    expect(results[2]!.result).toBe("ApiPolicyError: API svc is over its rate limit (limits.rate_per_minute); try again later; nothing was sent");
    const next = await one({ method: "GET", path: "/d" });
    expect(next.result).toMatch(/over its rate limit/);
    expect(seen.map((s) => s.url)).toEqual(["/v1/a", "/v1/b"]);
  });
});

describe("refusals: paths", () => {
  beforeEach(async () => {
    await start({ svc: svc() });
  });

  it.each([
    ["a query in the path", "/users?admin=1", "must not contain a query or fragment"],
    ["a fragment in the path", "/users#x", "must not contain a query or fragment"],
    ["a .. segment", "/users/../admin", "must not contain . or .. segments"],
    ["a . segment", "/users/./admin", "must not contain . or .. segments"],
    ["an encoded .. segment", "/users/%2e%2e/admin", "must not contain . or .. segments"],
    ["a mixed encoded .. segment", "/users/.%2E/admin", "must not contain . or .. segments"],
    ["an encoded slash", "/users/a%2Fb", "must not contain an encoded slash or backslash"],
    ["a lower-case encoded slash", "/users/a%2fb", "must not contain an encoded slash or backslash"],
    ["an encoded backslash", "/users/a%5cb", "must not contain an encoded slash or backslash"],
    ["a backslash", "/users\\..\\admin", "must not contain a backslash"],
    ["a semicolon", "/users;jsessionid=1", "must not contain ;"],
    ["a control character", "/users/\u0001", "must not contain control characters"],
    ["an encoded control character", "/users/%0a", "must not contain encoded control characters"],
    ["a non-ASCII character", "/usérs", "must be ASCII"],
    ["whitespace", "/users/a b", "must not contain whitespace"],
    ["an empty segment", "/users//admin", "must not contain empty segments"],
    ["a malformed escape", "/users/%zz", "has a malformed percent escape"],
    ["a relative path", "users", "must start with /"],
    ["an absolute URL", "http://evil.example/x", "must start with /"],
  ])("refuses %s", async (_label, path, reason) => {
    expectRefused(await one({ method: "GET", path }), reason);
    expect((await one({ method: "GET", path })).result).toContain("nothing was sent");
  });

  it.each([
    [".", "must be one non-empty segment"],
    ["..", "must be one non-empty segment"],
    ["a/b", "must be one non-empty segment"],
    ["", "must be one non-empty segment"],
  ])("refuses the path parameter %j", async (id, reason) => {
    expectRefused(await one({ method: "GET", path: "/users/{id}", pathParams: { id } }), `path parameter id ${reason}`);
  });

  it("refuses a placeholder without a value and a value without a placeholder", async () => {
    expectRefused(await one({ method: "GET", path: "/users/{id}" }), "path parameter id has no value; nothing was sent");
    expectRefused(await one({ method: "GET", path: "/users", pathParams: { id: "1" } }), "path parameter id has no {id} in the path");
  });

  // Regression: a repeated placeholder hides an extra path parameter, and the call is sent instead of refused.
  it("refuses a value without a placeholder when another placeholder repeats", async () => {
    expectRefused(await one({ method: "GET", path: "/users/{id}/friends/{id}", pathParams: { id: "1", extra: "2" } }), "path parameter extra has no {extra} in the path");
  });

  // Regression: a placeholder named like an Object.prototype member takes the inherited member as its value and is sent.
  it("refuses a placeholder named like an Object.prototype member when it has no value", async () => {
    expectRefused(await one({ method: "GET", path: "/users/{constructor}", pathParams: {} }), "path parameter constructor has no value");
  });
});

describe("refusals: headers, body and query", () => {
  beforeEach(async () => {
    await start({ svc: svc() });
  });

  it.each([
    ["CRLF", "a\r\nX-Injected: 1"],
    ["LF", "a\nb"],
    ["CR", "a\rb"],
    ["NUL", "a\u0000b"],
    ["DEL", "a\u007fb"],
  ])("refuses a header value with %s", async (_label, value) => {
    expectRefused(await one({ method: "GET", path: "/x", headers: { "X-Note": value } }), "header X-Note has a line break or control character; nothing was sent");
  });

  it("refuses a header name that is not an HTTP token", async () => {
    expectRefused(await one({ method: "GET", path: "/x", headers: { "X Bad": "1" } }), "a header name is not a valid HTTP token");
  });

  it.each(["_method", "_METHOD", "_Method"])("refuses the body key %s", async (key) => {
    expectRefused(await one({ method: "POST", path: "/x", body: { [key]: "DELETE", name: "n" } }), "the body key _method is refused (method override); nothing was sent");
  });

  it.each(["_method", "_METHOD", "_method[]", "%5Fmethod", " _method"])("refuses the query key %j", async (key) => {
    expectRefused(await one({ method: "GET", path: "/x", query: { [key]: "DELETE" } }), "the query parameter _method is refused (method override); nothing was sent");
  });

  it("refuses a body on GET and HEAD of an http API", async () => {
    expectRefused(await one({ method: "GET", path: "/x", body: { a: 1 } }), "a GET or HEAD call must not have a body");
    expectRefused(await one({ method: "HEAD", path: "/x", body: { a: 1 } }), "a GET or HEAD call must not have a body");
  });
});

describe("refusals: JSON-RPC API", () => {
  const rpc = { base_url_env: "RPC_URL", auth: "none", protocol: "jsonrpc", allowed_methods: ["GET", "POST"] };
  beforeEach(async () => {
    await start({ rpc });
  });
  const post = (body: unknown) => one({ api: "rpc", method: "POST", path: "/rpc", ...(body === undefined ? {} : { body }) });

  it("refuses a batch", async () => {
    expectRefused(await post([{ jsonrpc: "2.0", method: "ping", id: 1 }]), "JSON-RPC batches are refused: send one request; nothing was sent");
  });

  it("refuses a notification (no id)", async () => {
    expectRefused(await post({ jsonrpc: "2.0", method: "ping" }), "JSON-RPC notifications (no id) are refused; nothing was sent");
  });

  it("refuses extra members", async () => {
    expectRefused(await post({ jsonrpc: "2.0", method: "ping", id: 1, extra: true }), "the JSON-RPC request has members other than jsonrpc, method, params and id");
  });

  it("refuses requests that are not JSON-RPC 2.0 with a method, id and object params", async () => {
    expectRefused(await post({ jsonrpc: "1.0", method: "ping", id: 1 }), 'the JSON-RPC request must have jsonrpc "2.0"');
    expectRefused(await post({ jsonrpc: "2.0", id: 1 }), "the JSON-RPC request must name its method");
    expectRefused(await post({ jsonrpc: "2.0", method: "ping", id: { x: 1 } }), "the JSON-RPC id must be a string or a number");
    expectRefused(await post({ jsonrpc: "2.0", method: "ping", id: 1, params: "x" }), "JSON-RPC params must be an object or a list");
    expectRefused(await post("ping"), "the body must be one JSON-RPC 2.0 request");
  });

  it.each([
    ["a Date", "date", "the body must be plain JSON data"],
    ["a Map", "map", "the body must be plain JSON data"],
    ["undefined", "undefined", "the body must be plain JSON data"],
    ["NaN", "nan", "the body holds a number JSON cannot carry"],
  ])("refuses a body that is not plain JSON (%s)", async (_label, kind, reason) => {
    const { results } = await runMessage(`/call odd_body ${JSON.stringify({ kind })}`);
    expectRefused(results[0]!, reason);
  });

  it("refuses a body on GET", async () => {
    expectRefused(await one({ api: "rpc", method: "GET", path: "/rpc", body: { jsonrpc: "2.0", method: "ping", id: 1 } }), "must not have a body; nothing was sent");
  });

  it("refuses a POST without a body", async () => {
    expectRefused(await post(undefined), "the body must be one JSON-RPC 2.0 request; nothing was sent");
  });

  it("sends one proper request, exactly as given", async () => {
    const body = { jsonrpc: "2.0", method: "ping", id: "r1", params: { a: [1, 2] } };
    const r = answer(await post(body));
    expect(r.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe("POST");
    expect(seen[0]!.url).toBe("/rpc");
    expect(JSON.parse(seen[0]!.body)).toEqual(body);
    expect(seen[0]!.headers["content-type"]).toBe("application/json");
  });
});

describe("refusals: A2A API", () => {
  const peer = a2aPeer();
  beforeEach(async () => {
    await start({ peer });
  });
  const send = (params: unknown) => one({ api: "peer", method: "POST", path: "/a2a", body: { jsonrpc: "2.0", method: "SendMessage", id: 1, params } as never });

  it.each([
    ["no params", undefined],
    ["params without message", { configuration: {} }],
    ["a message without parts", { message: { role: "user", messageId: "m1" } }],
    ["parts that are not a list", { message: { role: "user", parts: "hi" } }],
    ["params as a list", [{ message: { parts: [] } }]],
  ])("refuses a message with %s", async (_label, params) => {
    expectRefused(await send(params), "an A2A message must have params.message with parts; nothing was sent");
  });

  it("refuses the 0.3 spelling alike", async () => {
    expectRefused(await one({ api: "peer", method: "POST", path: "/a2a", body: { jsonrpc: "2.0", method: "message/send", id: 1, params: {} } }), "an A2A message must have params.message with parts");
  });

  it("refuses an approve message (denied), and sends a plain message with the bearer credential", async () => {
    expectRefused(await send({ message: { role: "user", parts: [{ kind: "data", data: { approval_id: "a1", decision: "approve" } }] } }), "denied by denied_operations");
    answer(await send({ message: { role: "user", messageId: "m1", parts: [{ kind: "text", text: "hi" }] } }));
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe("/a2a");
    expect(seen[0]!.headers.authorization).toBe("Bearer peer-token");
  });
});

/** A policy client on the `svc` API alone, noting each URL it hands to fetch. */
function recordingClient(policy: ReturnType<typeof loadPolicy>, fetched: string[], gate: ApprovalGate | undefined, tracing?: Tracing) {
  return createPolicyClient({
    policy,
    baseUrls: new Map([["svc", `${origin}/v1`]]),
    tokens: new Map(),
    labels: buildLabelIndex(policy, new Map()),
    fetch: (input, init) => {
      fetched.push(String(input));
      return fetch(input, init);
    },
    clock: systemClock,
    logger: createLogger({ level: "ERROR", format: "json", write: () => {} }),
    gate,
    ...(tracing ? { tracing } : {}),
  });
}

/** The built-in approval gate on a memory store, as createApp wires it. */
function builtInGate(tracing: Tracing): ApprovalGate {
  return createApprovalGate({
    store: createMemoryStore(),
    clock: systemClock,
    ids: randomIds,
    metrics: createMetrics(),
    hashPrincipal: createPrincipalHasher(undefined),
    pauses: new PauseBook(),
    tracing,
  });
}

describe("refusals: approval and credentials", () => {
  it("refuses a gated call when no approval gate is wired (policy client without a gate); ungated calls go on", async () => {
    const policy = loadPolicy(policyOf({ svc: svc({ approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] } }) }));
    const fetched: string[] = [];
    const client = recordingClient(policy, fetched, undefined);
    const principal = { id: "u1", roles: [], permissions: new Set(), attributes: {}, credentials: {}, actor: null } as unknown as Principal;
    const api = client.forRun({
      threadId: "t1",
      runId: "r1",
      principal,
      signal: new AbortController().signal,
      logger: createLogger({ level: "ERROR", format: "json", write: () => {} }),
      resumed: false,
    } as never)({ tool: "req", toolCallId: "c1", reason: "" } as never);
    const refusal = await api.request("svc", { method: "POST", path: "/orders", body: { n: 1 } }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(ApiPolicyError);
    expect((refusal as Error).message).toBe("the call needs approval (API svc) and nothing here can hold it for a person; nothing was sent");
    expect(fetched).toEqual([]);
    expect(seen).toEqual([]);
    expect((await api.request("svc", { method: "GET", path: "/orders" })).status).toBe(200);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["GET /v1/orders"]);
  });

  it("hands an ungated call of a new run to fetch at once through the built-in gate; a resuming run's call and a gated one are looked up first", async () => {
    const policy = loadPolicy(policyOf({ svc: svc({ approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] } }) }));
    const tracing = createTracing({ capture: "metadata", propagate: "peers", agentName: "", agentVersion: "" });
    const gate = builtInGate(tracing);
    const fetched: string[] = [];
    const quiet = createLogger({ level: "ERROR", format: "json", write: () => {} });
    const client = recordingClient(policy, fetched, gate, tracing);
    const principal = { id: "u1", roles: [], permissions: new Set(), attributes: {}, credentials: {}, actor: null } as unknown as Principal;
    const runOf = (runId: string, resumed: boolean) =>
      client.forRun({ threadId: "t1", runId, principal, signal: new AbortController().signal, logger: quiet, resumed } as never)({ tool: "req", toolCallId: `c-${runId}`, reason: "" } as never);

    // Nothing recorded to look up: decided and handed to fetch before request() returns.
    const fresh = runOf("r1", false).request("svc", { method: "GET", path: "/orders" });
    expect(fetched).toEqual([`${origin}/v1/orders`]);
    expect((await fresh).status).toBe(200);
    // A resuming run's call may have an approval recorded: the gate looks it up first.
    const resuming = runOf("r2", true).request("svc", { method: "GET", path: "/orders" });
    expect(fetched).toHaveLength(1);
    expect((await resuming).status).toBe(200);
    expect(fetched).toHaveLength(2);
    // A gated call is recorded and pauses the run; nothing is sent.
    const gated = await runOf("r3", false).request("svc", { method: "POST", path: "/orders", body: { n: 1 } }).catch((e: unknown) => e);
    expect((gated as { code?: string }).code).toBe("paused");
    expect(fetched).toHaveLength(2);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["GET /v1/orders", "GET /v1/orders"]);
    client.close();
  });

  it("an ungated call of a stopped run is refused before fetch; a run stopped mid-call fails its call at once", async () => {
    const policy = loadPolicy(policyOf({ svc: svc() }));
    const tracing = createTracing({ capture: "metadata", propagate: "peers", agentName: "", agentVersion: "" });
    const fetched: string[] = [];
    const quiet = createLogger({ level: "ERROR", format: "json", write: () => {} });
    const client = recordingClient(policy, fetched, builtInGate(tracing), tracing);
    const principal = { id: "u1", roles: [], permissions: new Set(), attributes: {}, credentials: {}, actor: null } as unknown as Principal;
    const runOf = (runId: string, signal: AbortSignal) =>
      client.forRun({ threadId: "t1", runId, principal, signal, logger: quiet, resumed: false } as never)({ tool: "req", toolCallId: `c-${runId}`, reason: "" } as never);

    // Stopped before the call: the same-turn path checks the stop before anything goes out.
    const before = new AbortController();
    const stopped = new Error("run stopped");
    before.abort(stopped);
    await expect(runOf("r1", before.signal).request("svc", { method: "GET", path: "/orders" })).rejects.toBe(stopped);
    expect(fetched).toEqual([]);

    // Stopped while the upstream holds the answer: the call fails with the stop's reason, not the deadline.
    let held: ServerResponse | undefined;
    routes.set("/v1/held", (_req, res) => (held = res));
    const during = new AbortController();
    const call = runOf("r2", during.signal).request("svc", { method: "GET", path: "/held" });
    expect(fetched).toEqual([`${origin}/v1/held`]);
    await vi.waitFor(() => expect(held).toBeDefined());
    const cut = new Error("run cut");
    during.abort(cut);
    await expect(call).rejects.toBe(cut);
    held!.end();
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["GET /v1/held"]);
    client.close();
  });

  it("pauses the run on a gated call with the built-in approvals, and sends nothing", async () => {
    await start({ svc: svc({ approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] } }) });
    const { res, events } = await chat(app!, { message: script([[{ method: "POST", path: "/orders", body: { n: 1 } }]]) });
    expect(res.status).toBe(200);
    expect(events.at(-1)?.event).toBe("message.end");
    expect(events.at(-1)?.data.status).toBe("awaiting_approval");
    expect(seen).toEqual([]);
  });

  it("refuses a call whose approval gate says it was not approved; nothing is sent", async () => {
    app = await makeApp(
      { SVC_URL: `${origin}/v1` },
      {
        policyText: policyOf({ svc: svc({ approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] } }) }),
        tools: [req],
        approvalGate: {
          hold: async (_call: unknown, gate: unknown) => {
            if (gate) throw new ApiPolicyError("the call was not approved: too expensive; nothing was sent");
            return { kind: "free" };
          },
          answered: async () => {},
        } as never,
      },
    );
    expectRefused(await one({ method: "POST", path: "/orders", body: { n: 1 } }), "the call was not approved: too expensive; nothing was sent");
    answer(await one({ method: "GET", path: "/orders" }));
    expect(seen).toHaveLength(1);
  });

  it("refuses to start with auth forward or exchange under shared-bearer outside dev (spec 5.8)", async () => {
    await expect(start({ svc: svc({ auth: "forward" }) })).rejects.toThrow(/shared-bearer/);
    await expect(start({ svc: svc({ auth: "exchange", exchange: { audience: "svc-api" } }) })).rejects.toThrow(/shared-bearer/);
  });

  it("refuses auth forward when the caller has no credential for the API", async () => {
    // Under dev the mismatch is logged and the service starts; the call is still refused.
    await start({ svc: svc({ auth: "forward" }) }, { env: { APP_ENV: "dev" } });
    expectRefused(await one({ method: "GET", path: "/me" }), "the caller has no credential to forward to API svc; nothing was sent");
  });

  it("refuses auth exchange when no token issuer is configured (TOKEN_EXCHANGE_URL unset, under dev)", async () => {
    await start({ svc: svc({ auth: "exchange", exchange: { audience: "svc-api" } }) }, { env: { APP_ENV: "dev" } });
    expectRefused(await one({ method: "GET", path: "/me" }), "token exchange for API svc is not configured (TOKEN_EXCHANGE_URL); nothing was sent");
  });

  it("refuses a call to an API the policy does not name", async () => {
    await start({ svc: svc() });
    expectRefused(await one({ api: "nope", method: "GET", path: "/x" }), 'there is no API named "nope" in the policy; nothing was sent');
  });
});

// ---------------------------------------------------------------------------------------------
// What is sent
// ---------------------------------------------------------------------------------------------

describe("what is sent", () => {
  it("sends the path exactly as judged: base path prefix kept, each path parameter one encoded segment", async () => {
    await start({ svc: svc() });
    for (const [id, encoded] of [
      ["a b", "a%20b"],
      ["a?b#c", "a%3Fb%23c"],
      ["%2F", "%252F"],
      ["..%2f", "..%252f"],
      ["a;b", "a%3Bb"],
      ["\\", "%5C"],
      ["é", "%C3%A9"],
      ["...", "..."],
      [".a", ".a"],
    ] as const) {
      seen.length = 0;
      const r = await one({ method: "GET", path: "/users/{id}/items", pathParams: { id } });
      if (id === "\\") {
        // A backslash value encodes to %5C, which the concrete check refuses like a raw backslash.
        expectRefused(r, "must not contain an encoded slash or backslash");
        continue;
      }
      answer(r);
      expect(seen.map((s) => s.url)).toEqual([`/v1/users/${encoded}/items`]);
    }
  });

  it("sends the judged segments for unreserved escapes (either spelling) and keeps a trailing slash", async () => {
    await start({ svc: svc() });
    answer(await one({ method: "GET", path: "/%75sers/" }));
    answer(await one({ method: "GET", path: "/" }));
    answer(await one({ method: "GET", path: "/a%7Eb/%41" }));
    expect(seen.map((s) => norm(s.url))).toEqual(["/v1/users/", "/v1/", "/v1/a~b/A"]);
    // Escapes of reserved characters are kept as escapes (never decoded into delimiters).
    seen.length = 0;
    answer(await one({ method: "GET", path: "/a%3Fb/%23" }));
    expect(seen.map((s) => s.url)).toEqual(["/v1/a%3Fb/%23"]);
  });

  // Regression: `/x<y` is judged raw, escapes the denial `/x%3Cy`, and the URL parser sends it as `/x%3Cy`.
  it("sends the path exactly as judged even for characters a URL parser encodes (\" < > `)", async () => {
    await start({ svc: svc({ denied_operations: [{ path: "/x%3Cy" }, { path: "/q%22" }] }) });
    for (const path of ["/x<y", '/q"']) {
      seen.length = 0;
      const r = await one({ method: "GET", path });
      if (r.is_error) expectRefused(r, /ApiPolicyError/);
      else expect(seen.map((s) => s.url)).toEqual([`/v1${path}`]);
    }
  });

  it("builds the query in order and caps the page size in every spelling and shape", async () => {
    await start({ svc: svc({ pagination: { page_size_param: "limit", max_page_size: 50 } }) });
    const cases: [Record<string, unknown>, string][] = [
      [{ limit: 500 }, "limit=50"],
      [{ limit: 10 }, "limit=10"],
      [{ limit: "50" }, "limit=50"],
      [{ LIMIT: "500" }, "LIMIT=50"],
      [{ Limit: 51 }, "Limit=50"],
      [{ "limit[]": 99 }, "limit%5B%5D=50"],
      [{ "LIMIT[]": 99 }, "LIMIT%5B%5D=50"],
      [{ "limit%5B%5D": 99 }, "limit%255B%255D=50"],
      [{ limit: [5, 500, "abc"] }, "limit=5&limit=50&limit=50"],
      [{ limit: "abc" }, "limit=50"],
      [{ limit: "-1" }, "limit=50"],
      [{ limit: "1e9" }, "limit=50"],
      [{ limit: "0x100" }, "limit=50"],
      [{ limit: true }, "limit=50"],
      [{ limit: "" }, "limit=50"],
      // White space around the digits is read as Number() reads it; digits of other scripts are not digits.
      [{ limit: " 20 " }, "limit=%2020%20"],
      [{ limit: "\t70\n" }, "limit=50"],
      [{ limit: "\u0663" }, "limit=50"],
      [{ q: "a b&c=d", limit: 20, page: 3 }, "q=a%20b%26c%3Dd&limit=20&page=3"],
      [{ tags: ["x", "y"] }, "tags=x&tags=y"],
      // Unreserved characters as written, everything else as encodeURIComponent writes it (and
      // the URL parser then writes ' of a query as %27).
      [{ "a.b_c~d-E9": "x.Y~z-0_" }, "a.b_c~d-E9=x.Y~z-0_"],
      [{ "k*": "!'()*", q: "é/ü?#" }, "k*=!%27()*&q=%C3%A9%2F%C3%BC%3F%23"],
    ];
    for (const [query, expected] of cases) {
      seen.length = 0;
      answer(await one({ method: "GET", path: "/items", query }));
      expect(seen.map((s) => s.url), JSON.stringify(query)).toEqual([`/v1/items?${expected}`]);
    }
  });

  // Regression: the indexed array shape `limit[0]=1000` (read as limit by qs, PHP, Rack) passes the page-size cap.
  it("caps the page size in the indexed array shape limit[0]", async () => {
    await start({ svc: svc({ pagination: { page_size_param: "limit", max_page_size: 50 } }) });
    answer(await one({ method: "GET", path: "/items", query: { "limit[0]": 1000 } }));
    expect(seen.map((s) => s.url)).toEqual(["/v1/items?limit%5B0%5D=50"]);
  });

  it("drops headers that change where a request goes or which method applies, and hop-by-hop headers; the call goes on", async () => {
    await start({ svc: svc() });
    const r = answer(
      await one({
        method: "GET",
        path: "/h",
        headers: {
          Host: "evil.example",
          "X-Forwarded-For": "6.6.6.6",
          "X-Forwarded-Host": "evil.example",
          Forwarded: "for=6.6.6.6;host=evil.example",
          "X-HTTP-Method-Override": "DELETE",
          "X-HTTP-Method": "DELETE",
          "X-Method-Override": "DELETE",
          "X-Original-URL": "/admin",
          "X-Rewrite-URL": "/admin",
          Connection: "x-tool-hop",
          "Keep-Alive": "timeout=99",
          TE: "trailers",
          Upgrade: "websocket",
          "Proxy-Authorization": "Basic c2VjcmV0",
          "Transfer-Encoding": "chunked",
          "X-Kept": "kept",
        },
      }),
    );
    expect(r.status).toBe(200);
    expect(seen).toHaveLength(1);
    const h = seen[0]!.headers;
    expect(seen[0]!.method).toBe("GET");
    expect(seen[0]!.url).toBe("/v1/h");
    expect(h.host).toBe(new URL(origin).host);
    for (const name of [
      "x-forwarded-for",
      "x-forwarded-host",
      "forwarded",
      "x-http-method-override",
      "x-http-method",
      "x-method-override",
      "x-original-url",
      "x-rewrite-url",
      "keep-alive",
      "te",
      "upgrade",
      "proxy-authorization",
      "x-tool-hop",
    ])
      expect(h[name], name).toBeUndefined();
    expect(h.connection).not.toBe("x-tool-hop");
    expect(h["transfer-encoding"]).toBeUndefined();
    expect(h["x-kept"]).toBe("kept");
  });

  it("sends the bearer credential from token_env, overriding a tool-set Authorization", async () => {
    await start({ svc: svc({ auth: "bearer", token_env: "SVC_TOKEN" }) });
    answer(await one({ method: "GET", path: "/me", headers: { Authorization: "Bearer tool-made", "x-other": "1" } }));
    answer(await one({ method: "GET", path: "/me", headers: { authorization: "Basic dG9vbA==" } }));
    answer(await one({ method: "GET", path: "/me" }));
    expect(seen.map((s) => s.headers.authorization)).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
  });

  it("sends no Authorization with auth none", async () => {
    await start({ svc: svc() });
    answer(await one({ method: "GET", path: "/me" }));
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });

  it("sends a JSON body with Content-Type application/json", async () => {
    await start({ svc: svc() });
    answer(await one({ method: "POST", path: "/orders", body: { item: "x", n: 2 } }));
    expect(seen[0]!.method).toBe("POST");
    expect(seen[0]!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(seen[0]!.body)).toEqual({ item: "x", n: 2 });
  });
});

// ---------------------------------------------------------------------------------------------
// Redirects, answer size and encodings, timeouts, answers
// ---------------------------------------------------------------------------------------------

describe("redirects are never followed", () => {
  it.each([301, 302, 303, 307, 308])("%i: the tool gets an ApiCallError and the target is never requested", async (status) => {
    await start({ svc: svc() });
    routes.set("/v1/moved", (_req, res) => {
      res.writeHead(status, { Location: `${origin}/v1/target` });
      res.end();
    });
    const r = await one({ method: status === 303 ? "POST" : "GET", path: "/moved", ...(status === 303 ? { body: {} } : {}) });
    expectCallError(r, /redirect/);
    expect(r.result).toContain("never followed");
    expect(seen.map((s) => s.url)).toEqual(["/v1/moved"]);
  });
});

describe("max_response_bytes", () => {
  const CAP = 100 * 1024;
  const capped = () => start({ svc: svc({ limits: { max_response_bytes: CAP } }) });
  const sendRaw = (path: string, body: Buffer, headers: Record<string, string>) =>
    routes.set(path, (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/octet-stream", ...headers });
      res.end(body);
    });

  it("asks for gzip or deflate only", async () => {
    await capped();
    answer(await one({ method: "GET", path: "/x", headers: { "Accept-Encoding": "br, zstd" } }));
    expect(seen[0]!.headers["accept-encoding"]).toBe("gzip, deflate");
  });

  it("accepts an identity answer under the cap", async () => {
    await capped();
    sendRaw("/v1/small", Buffer.alloc(CAP, "a"), { "Content-Type": "text/plain" });
    const r = answer(await one({ method: "GET", path: "/small" }));
    expect(r.body).toBe("a".repeat(CAP));
  });

  it("discards an identity answer over the cap (declared length, nothing read)", async () => {
    await capped();
    routes.set("/v1/big", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": String(CAP + 1) });
      res.write("a"); // the rest never comes: only the declared length can end this quickly
    });
    const started = Date.now();
    expectCallError(await one({ method: "GET", path: "/big" }), /larger than max_response_bytes \(102400\); it was discarded/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("discards a chunked identity answer over the cap while reading", async () => {
    await capped();
    routes.set("/v1/stream", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      for (let i = 0; i < 20; i++) res.write(Buffer.alloc(10 * 1024, "b"));
      res.end();
    });
    expectCallError(await one({ method: "GET", path: "/stream" }), /larger than max_response_bytes/);
  });

  it.each([
    ["gzip", gzipSync],
    ["x-gzip", gzipSync],
    ["deflate", deflateSync],
  ] as const)("accepts a %s answer under the cap, decoded", async (encoding, encode) => {
    await capped();
    const value = { items: Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item-${i}` })) };
    const text = JSON.stringify(value);
    expect(text.length).toBeLessThan(CAP);
    sendRaw("/v1/z", encode(Buffer.from(text)), { "Content-Type": "application/json", "Content-Encoding": encoding });
    expect(answer(await one({ method: "GET", path: "/z" })).body).toEqual(value);
  });

  it.each([
    ["gzip", gzipSync],
    ["deflate", deflateSync],
  ] as const)("counts decoded bytes: a 1 MB %s answer of zeros that compresses small fails", async (encoding, encode) => {
    await capped();
    const packed = encode(Buffer.alloc(1024 * 1024));
    expect(packed.length).toBeLessThan(2 * 1024);
    sendRaw("/v1/bomb", packed, { "Content-Encoding": encoding });
    expectCallError(await one({ method: "GET", path: "/bomb" }), /larger than max_response_bytes/);
  });

  it("counts decoded bytes just over the cap", async () => {
    await capped();
    sendRaw("/v1/edge", gzipSync(Buffer.alloc(CAP + 1, "c")), { "Content-Encoding": "gzip" });
    expectCallError(await one({ method: "GET", path: "/edge" }), /larger than max_response_bytes/);
    sendRaw("/v1/edge2", gzipSync(Buffer.alloc(CAP, "c")), { "Content-Encoding": "gzip", "Content-Type": "text/plain" });
    expect((answer(await one({ method: "GET", path: "/edge2" })).body as string).length).toBe(CAP);
  });

  it("without a cap, fails an answer past the largest cap a policy can set, and reads one under it whole", async () => {
    expect(ANSWER_CEILING).toBe(67108864);
    await start({ svc: svc() });
    // gzip keeps the wire small; the bytes counted are the decoded ones.
    sendRaw("/v1/huge", gzipSync(Buffer.alloc(ANSWER_CEILING + 1)), { "Content-Encoding": "gzip" });
    expectCallError(await one({ method: "GET", path: "/huge" }), /larger than 67108864 bytes, the most read from an API without limits\.max_response_bytes; it was discarded/);
    // Under it, an answer without a cap is read whole, in any encoding fetch decodes.
    sendRaw("/v1/most", brotliCompressSync(Buffer.alloc(1024 * 1024, "d")), { "Content-Encoding": "br", "Content-Type": "text/plain" });
    expect((answer(await one({ method: "GET", path: "/most" })).body as string).length).toBe(1024 * 1024);
  }, 30_000);

  it.each([
    ["br", () => brotliCompressSync(Buffer.from("hello"))],
    ["gzip, gzip", () => gzipSync(gzipSync(Buffer.from("hello")))],
    ["gzip, deflate", () => deflateSync(gzipSync(Buffer.from("hello")))],
    ["identity, gzip", () => gzipSync(Buffer.from("hello"))],
    ["compress", () => Buffer.from("hello")],
    ["x-custom", () => Buffer.from("hello")],
    ["zstd", () => Buffer.from("hello")],
  ])("refuses the content encoding %j unread", async (encoding, body) => {
    await capped();
    routes.set("/v1/enc", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain", "Content-Encoding": encoding });
      res.write(body()); // never ended: reading it would hang until the timeout
    });
    const started = Date.now();
    expectCallError(await one({ method: "GET", path: "/enc" }), /content encoding is not identity, gzip or deflate; it was not read/);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("timeouts_ms: one deadline for the whole answer", () => {
  const slow = () => start({ svc: svc({ timeouts_ms: { connect: 100, read: 200 } }) });

  // Where timers outlive a request (intervalJobs, the default) the calls share one deadline
  // timer; on workerd each call has its own.
  it.each([
    ["one shared deadline timer", true],
    ["a timer a call", false],
  ])("fails a call whose headers never come, and the next call still gets its whole deadline: %s", async (_, intervalJobs) => {
    await start({ svc: svc({ timeouts_ms: { connect: 100, read: 200 } }) }, { intervalJobs });
    routes.set("/v1/hang", () => {});
    const started = Date.now();
    expectCallError(await one({ method: "GET", path: "/hang" }), /did not answer within its timeout/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(seen).toHaveLength(1);
    // An answer 120 ms late is within a new call's 200 ms, wherever the shared timer is armed.
    routes.set("/v1/late", (_req, res) => {
      const t = setTimeout(() => json(res, 200, { late: true }), 120);
      res.on("close", () => clearTimeout(t));
    });
    for (let i = 0; i < 3; i++) {
      const result = await one({ method: "GET", path: "/late" });
      expect(result.is_error, result.result).toBe(false);
    }
  });

  it.each([
    ["one shared deadline timer", true],
    ["a timer a call", false],
  ])("stopping a run fails its calls in flight at once with the run's reason; another run's call keeps its deadline: %s", async (_, sharedDeadlines) => {
    routes.set("/v1/hang", () => {});
    const policy = loadPolicy(policyOf({ svc: svc({ timeouts_ms: { connect: 1000, read: 400 } }) }));
    const quiet = createLogger({ level: "ERROR", format: "json", write: () => {} });
    const client = createPolicyClient({
      policy,
      baseUrls: new Map([["svc", `${origin}/v1`]]),
      tokens: new Map(),
      labels: buildLabelIndex(policy, new Map()),
      fetch,
      clock: systemClock,
      logger: quiet,
      gate: undefined,
      sharedDeadlines,
    });
    const principal = { id: "u1", roles: [], permissions: new Set(), attributes: {}, credentials: {}, actor: null } as unknown as Principal;
    const runOf = (runId: string, signal: AbortSignal) =>
      client.forRun({ threadId: `t-${runId}`, runId, principal, signal, logger: quiet, resumed: false } as never)({ tool: "req", toolCallId: "c1", reason: "" } as never);
    const stopA = new AbortController();
    const a = runOf("a", stopA.signal);
    const b = runOf("b", new AbortController().signal);
    const settled = (p: Promise<unknown>) => p.then((v) => ({ ok: true, v }), (e: unknown) => ({ ok: false, e }));
    const started = Date.now();
    const [a1, bCall, a2, a3] = [a, b, a, a].map((run) => settled(run.request("svc", { method: "GET", path: "/hang" })));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reason = new Error("the run was stopped");
    stopA.abort(reason);
    for (const call of [a1, a2, a3]) expect(await call).toEqual({ ok: false, e: reason });
    expect(Date.now() - started).toBeLessThan(300);
    // Run b's call was left alone: it fails at its own deadline, not with a's reason.
    const late = (await bCall) as { ok: boolean; e: Error };
    expect(late.ok).toBe(false);
    expect(late.e.message).toMatch(/did not answer within its timeout/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    client.close();
  });

  it("fails a slow-drip body (a byte every 100 ms) past the deadline", async () => {
    await slow();
    routes.set("/v1/drip", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      const t = setInterval(() => res.write("x"), 100);
      timers.add(t);
      res.on("close", () => clearInterval(t));
    });
    const started = Date.now();
    expectCallError(await one({ method: "GET", path: "/drip" }), /did not answer within its timeout/);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("fails a slow-drip body under a response cap too", async () => {
    await start({ svc: svc({ timeouts_ms: { connect: 100, read: 200 }, limits: { max_response_bytes: 1000 } }) });
    routes.set("/v1/drip", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      const t = setInterval(() => res.write("x"), 100);
      timers.add(t);
      res.on("close", () => clearInterval(t));
    });
    expectCallError(await one({ method: "GET", path: "/drip" }), /did not answer within its timeout/);
  });

  // Regression: the whole call gets connect + read, so an answer 500 ms late under read: 200 is accepted.
  it("applies the read deadline from when the request is sent, not connect + read", async () => {
    await start({ svc: svc({ timeouts_ms: { connect: 1000, read: 200 } }) });
    routes.set("/v1/late", (_req, res) => {
      const t = setTimeout(() => json(res, 200, { late: true }), 500);
      res.on("close", () => clearTimeout(t));
    });
    expectCallError(await one({ method: "GET", path: "/late" }), /did not answer within its timeout/);
  });

  it("fails a call to an upstream that is not listening", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    app = await makeApp({ SVC_URL: `http://127.0.0.1:${port}` }, { policyText: policyOf({ svc: svc() }), tools: [req] });
    expectCallError(await one({ method: "GET", path: "/x" }), /failed before an answer arrived/);
  });
});

describe("answers", () => {
  beforeEach(async () => {
    await start({ svc: svc() });
  });

  it("parses JSON answers into body", async () => {
    routes.set("/v1/j", (_req, res) => json(res, 200, { a: [1, { b: null }] }, { "X-Answer": "yes" }));
    const r = answer(await one({ method: "GET", path: "/j" }));
    expect(r).toMatchObject({ status: 200, body: { a: [1, { b: null }] } });
    expect(r.headers["x-answer"]).toBe("yes");
    routes.set("/v1/p", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/problem+json; charset=utf-8" });
      res.end('{"title":"t"}');
    });
    expect(answer(await one({ method: "GET", path: "/p" })).body).toEqual({ title: "t" });
  });

  it("keeps text answers as text, and unparsable JSON as text", async () => {
    routes.set("/v1/t", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end('{"not":"parsed"}');
    });
    expect(answer(await one({ method: "GET", path: "/t" })).body).toBe('{"not":"parsed"}');
    routes.set("/v1/bad", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end("{oops");
    });
    expect(answer(await one({ method: "GET", path: "/bad" })).body).toBe("{oops");
  });

  it.each([400, 404, 409, 500, 503])("returns status %i as an answer, not an error", async (status) => {
    routes.set("/v1/s", (_req, res) => json(res, status, { error: "nope" }));
    const r = answer(await one({ method: "GET", path: "/s" }));
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ error: "nope" });
  });

  it("never passes Set-Cookie back to the tool", async () => {
    routes.set("/v1/c", (_req, res) => json(res, 200, {}, { "Set-Cookie": "sid=secret" }));
    const r = answer(await one({ method: "GET", path: "/c" }));
    expect(r.headers["set-cookie"]).toBeUndefined();
  });

  it("runs parallel calls of one turn and sequential turns, each to its own answer", async () => {
    const { results } = await runCalls(
      [
        { method: "GET", path: "/p1" },
        { method: "GET", path: "/admin/../p2" },
      ],
      [{ method: "GET", path: "/p3" }],
    );
    expect(answer(results[0]!).body).toEqual({ ok: true, path: "/v1/p1" });
    expect(results[1]!.result).toMatch(/^ApiPolicyError: the path is refused/);
    expect(answer(results[2]!).body).toEqual({ ok: true, path: "/v1/p3" });
    expect(seen.map((s) => s.url).sort()).toEqual(["/v1/p1", "/v1/p3"]);
  });
});

describe("X-Request-ID on outbound calls (PROPAGATE_TRACE_HEADERS, spec 6.4)", () => {
  const peer = a2aPeer();
  const RID = "req-abc.123:xyz";
  const toPeer = { api: "peer", method: "POST", path: "/a2a", body: { jsonrpc: "2.0", method: "GetTask", id: 1, params: { id: "t1" } } };
  const toSvc = { method: "GET", path: "/plain" };
  /** Both calls in one run under `setting`; the request ids each upstream call carried. */
  async function carried(setting: string | undefined, svcHeaders: Record<string, string> = {}) {
    await app?.close();
    seen.length = 0;
    await start({ svc: svc(), peer }, { env: setting === undefined ? {} : { PROPAGATE_TRACE_HEADERS: setting } });
    const { events } = await chat(app!, { message: script([[toPeer, { ...toSvc, headers: svcHeaders }]]) }, { "X-Request-ID": RID });
    expect(events.at(-1)?.data.status).toBe("ok");
    const byPath = (p: string) => seen.find((s) => s.url.startsWith(p))?.headers["x-request-id"];
    return { peer: byPath("/a2a"), svc: byPath("/v1/plain") };
  }

  it("peers (the default): the call to the other agent carries the request's id, a plain API does not", async () => {
    expect(await carried(undefined)).toEqual({ peer: RID, svc: undefined });
    expect(await carried("yes")).toEqual({ peer: RID, svc: undefined });
  });

  it("all: every call carries it; a header the tool set wins", async () => {
    expect(await carried("all")).toEqual({ peer: RID, svc: RID });
    expect(await carried("all", { "X-Request-ID": "tool-set" })).toEqual({ peer: RID, svc: "tool-set" });
  });

  it("off: no call carries it", async () => {
    expect(await carried("off")).toEqual({ peer: undefined, svc: undefined });
  });
});

describe("a credential to an A2A peer over plain http (spec 5.8)", () => {
  const peer = a2aPeer("FAR_URL");
  it("is refused outside dev before anything is sent, from any tool, when the host is not loopback, single-label or .svc", async () => {
    await start({ peer }, { env: { FAR_URL: "http://peer.example.test" } });
    const r = await one({ api: "peer", method: "POST", path: "/a2a", body: { jsonrpc: "2.0", method: "GetTask", id: 1, params: { id: "t1" } } });
    expectRefused(r, "would send a credential over plain http");
  });
});

describe("the call's log line names its operation or template, never what the model wrote (spec 6.3)", () => {
  /** Code that writes the model's `name` into the path itself, instead of pathParams. */
  const lookup = defineTool({
    name: "lookup",
    description: "Looks a user's orders up by name.",
    parameters: { type: "object", properties: { name: { type: "string" }, how: { type: "string" } }, required: ["name", "how"] },
    calls: [],
    run: (args, ctx) => {
      const name = String(args.name);
      if (args.how === "params") return ctx.api.request("svc", { method: "GET", path: "/users/{name}/orders", pathParams: { name } }) as never;
      if (args.how === "labelled") return ctx.api.request("svc", { method: "GET", path: `/users/${encodeURIComponent(name)}/orders`, operationId: "listOrders" }) as never;
      return ctx.api.request(args.how === "items" ? "items" : "svc", { method: "GET", path: `/${args.how === "items" ? "items" : "users"}/${encodeURIComponent(name)}/orders` }) as never;
    },
  });
  const apiCalls = () => app!.logs.filter((l) => l.message === "api call");
  const lookupLine = (name: string, how: string) => `/call lookup ${JSON.stringify({ name, how })}`;

  it("a path segment the model wrote reads {id}; the code's own segments, pathParams' template and an allowed operation's template stay", async () => {
    await start({ svc: svc(), items: svc({ allowed_operations: [{ path: "/items/{sku}/orders", methods: ["GET"] }] }) }, { tools: [lookup] });
    const secret = "Jane Private-Name";
    await runMessage(
      [
        lookupLine(secret, "inline"),
        lookupLine(secret, "params"),
        lookupLine(secret, "labelled"),
        lookupLine(secret, "items"),
        `/call req ${JSON.stringify({ api: "svc", req: { method: "GET", path: "/ok/Private-Segment" } })}`,
      ].join("\n"),
    );
    // Each call was sent as written (the log is the only thing that changes).
    expect(seen.map((s) => norm(s.url))).toEqual([
      "/v1/users/Jane%20Private-Name/orders",
      "/v1/users/Jane%20Private-Name/orders",
      "/v1/users/Jane%20Private-Name/orders",
      "/v1/items/Jane%20Private-Name/orders",
      "/v1/ok/Private-Segment",
    ]);
    expect(apiCalls().map((l) => [l.api, l.method, l.operation, l.status])).toEqual([
      ["svc", "GET", "/users/{id}/orders", 200],
      ["svc", "GET", "/users/{name}/orders", 200],
      ["svc", "GET", "listOrders", 200],
      ["items", "GET", "/items/{sku}/orders", 200],
      // The whole request came from the model here: every segment of its path is an argument's.
      ["svc", "GET", "/{id}/{id}", 200],
    ]);
    const logged = JSON.stringify(app!.logs);
    expect(logged).not.toContain("Private");
  });
});
