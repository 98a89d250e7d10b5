/**
 * `auth: exchange` end to end (spec 5.8): createApp under AUTH_POLICY=jwt with a loopback JWK
 * set, a loopback RFC 8693 token issuer that records every exchange, and a recording upstream.
 * A tool's call reaches the upstream with `Authorization: Bearer <exchanged token>`; the issuer
 * hears nothing while a request is authenticated, for a denied call, or for a gated call before
 * it is approved; a failed exchange leaves an approved call unclaimed; a run resumed by a role
 * approver has no token to exchange and sends nothing.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defineTool } from "../../src/index.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { chat, makeApp, parseSse, post, type TestApp } from "../helpers.js";
import { everyText, memoryTracer } from "../support/memory-tracer.js";
import { createOrder, GATED } from "../support/orders.js";
import { recordingUpstream } from "../support/upstream.js";
import { AUD, bearer, clock, ISS, Issuer, type KeyPair, makeKey, mint, T0 } from "./jwt-fixtures.js";

const b64 = (s: string) => Buffer.from(s).toString("base64url");
/** What the issuer hands out: a JWT naming this agent as the actor (the upstream would verify it). */
const EXCHANGED = `${b64('{"alg":"ES256"}')}.${b64(JSON.stringify({ sub: "u1", aud: "orders-api", act: { sub: "agent-a" } }))}.c2lnbmF0dXJl`;

/** The token issuer's exchange endpoint: records each form, answers `status` (200: EXCHANGED). */
const exchanges: Record<string, string>[] = [];
let exchangeStatus = 200;
let exchangeServer: Server;
let exchangeUrl = "";

const jwks = new Issuer();
let key: KeyPair;
const upstream = recordingUpstream();

beforeAll(async () => {
  await jwks.start();
  key = await makeKey("ES256", "k1");
  exchangeServer = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      exchanges.push(Object.fromEntries(new URLSearchParams(body)));
      res.writeHead(exchangeStatus, { "content-type": "application/json" });
      res.end(JSON.stringify(exchangeStatus === 200 ? { access_token: EXCHANGED, token_type: "Bearer", expires_in: 300 } : { error: "invalid_grant" }));
    });
  });
  await new Promise<void>((r) => exchangeServer.listen(0, "127.0.0.1", r));
  exchangeUrl = `http://127.0.0.1:${(exchangeServer.address() as AddressInfo).port}/token`;
});
afterAll(async () => {
  await jwks.stop();
  exchangeServer.closeAllConnections();
  await new Promise<void>((r) => exchangeServer.close(() => r()));
});

const POLICY = (approvers = "[requester]") => `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: exchange
    exchange: { audience: orders-api, scope: "orders:write" }
    allowed_methods: [GET, POST]
    denied_operations: [{ path: /secret }]
    approval:
      required_for: { methods: [POST] }
      approvers: ${approvers}
      timeout_s: 600
`;

/** A tool that GETs `path`; `declared: false` leaves the call out of its declared calls (startup refuses a declared denied call). */
const getTool = (name: string, path: string, declared = true) =>
  defineTool({
    name,
    description: `GET ${path} on the orders API`,
    parameters: { type: "object", properties: {} },
    calls: declared ? [{ api: "orders", method: "GET", path }] : [],
    run: async (_args, ctx) => (await ctx.api.request("orders", { method: "GET", path })).status,
  });

let app: TestApp;
let store: Store;
beforeEach(async () => {
  clock.t = T0;
  jwks.reset([key.jwk]);
  upstream.hits.length = 0;
  exchanges.length = 0;
  exchangeStatus = 200;
  store = createMemoryStore();
});
afterEach(async () => app?.close());

/** The app's environment: jwt with the loopback key set, the token issuer, the upstream; `over` wins (undefined unsets). */
function appEnv(over: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {
    AUTH_POLICY: "jwt",
    AUTH_JWT_JWKS_URL: jwks.url,
    AUTH_JWT_ISSUER: ISS,
    AUTH_JWT_AUDIENCE: AUD,
    ORDERS_URL: upstream.base,
    TOKEN_EXCHANGE_URL: exchangeUrl,
    TOKEN_EXCHANGE_CLIENT_ID: "agent-a",
    TOKEN_EXCHANGE_CLIENT_SECRET: "secret-a",
    ...over,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

async function start(approvers?: string): Promise<TestApp> {
  const tools = [getTool("list_orders", "/orders"), getTool("read_secret", "/secret", false), createOrder];
  app = await makeApp(appEnv(), { clock, store, policyText: POLICY(approvers), tools });
  return app;
}

const toolResult = (events: { event: string; data: Record<string, any> }[]) => events.find((e) => e.event === "tool.result")!.data as { result: string; is_error: boolean };
const metric = async (line: string) => {
  const text = await (await app.fetch(new Request("http://test/metrics"))).text();
  return Number(text.split("\n").find((l) => l.startsWith(line))?.split(" ").at(-1) ?? 0);
};

describe("auth: exchange through the app", () => {
  it("the upstream receives Bearer <exchanged token>; the issuer is not called while requests are authenticated", async () => {
    await start();
    const token = await mint({}, key);
    expect((await app.fetch(new Request("http://test/threads", { headers: bearer(token) }))).status).toBe(200);
    const plain = await chat(app, { message: "/answer hello" }, bearer(token));
    expect(plain.res.status).toBe(200);
    expect(exchanges).toEqual([]);

    const { res, events } = await chat(app, { message: "/call list_orders {}" }, bearer(token));
    expect(res.status).toBe(200);
    expect(toolResult(events)).toMatchObject({ is_error: false, result: "200" });
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]).toMatchObject({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      subject_token: token,
      requested_token_type: "urn:ietf:params:oauth:token-type:access_token",
      audience: "orders-api",
      scope: "orders:write",
    });
    expect(upstream.hits).toHaveLength(1);
    expect(upstream.hits[0]!.headers.authorization).toBe(`Bearer ${EXCHANGED}`);

    // The same caller's token again: the exchanged token is reused.
    await chat(app, { message: "/call list_orders {}" }, bearer(token));
    expect(exchanges).toHaveLength(1);
    expect(upstream.hits[1]!.headers.authorization).toBe(`Bearer ${EXCHANGED}`);

    expect(await metric('agent_token_exchanges_total{api="orders",outcome="issued"}')).toBe(1);
    expect(await metric('agent_token_exchanges_total{api="orders",outcome="cached"}')).toBe(1);
    expect(await metric('agent_token_exchange_duration_seconds_count{api="orders"}')).toBe(1);
    const exchangeLines = app.logs.filter((l) => l.message === "token exchange");
    expect(exchangeLines).toEqual([expect.objectContaining({ api: "orders", outcome: "issued", status: 200, run_id: expect.any(String) })]);
    for (const secret of [EXCHANGED, token.split(".")[2]!, "secret-a", "orders:write"]) expect(app.rawLogs.join("\n")).not.toContain(secret);
  });

  it("a denied call is refused before any exchange: nothing reaches the issuer or the upstream", async () => {
    await start();
    const { events } = await chat(app, { message: "/call read_secret {}" }, bearer(await mint({}, key)));
    expect(toolResult(events)).toMatchObject({ is_error: true, result: expect.stringMatching(/^ApiPolicyError: /) });
    expect(exchanges).toEqual([]);
    expect(upstream.hits).toEqual([]);
  });

  it("a gated call is exchanged only once approved, then sent with the exchanged token", async () => {
    await start();
    const token = await mint({}, key);
    const paused = await chat(app, { message: GATED, thread_id: "t1" }, bearer(token));
    const end = paused.events.at(-1)!;
    expect(end.data.status).toBe("awaiting_approval");
    expect(exchanges).toEqual([]);
    const { approval_id, digest } = end.data.approval as { approval_id: string; digest: string };
    const res = await app.fetch(post(`/threads/t1/approvals/${approval_id}`, { decision: "approve", digest }, bearer(token)));
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(toolResult(events).is_error).toBe(false);
    expect(exchanges).toHaveLength(1);
    expect(upstream.hits).toHaveLength(1);
    expect(upstream.hits[0]!.headers.authorization).toBe(`Bearer ${EXCHANGED}`);
    expect(upstream.hits[0]!.headers["idempotency-key"]).toBe(approval_id);
  });

  it("an exchange the issuer refuses leaves the approved call unclaimed and unsent", async () => {
    await start();
    const token = await mint({}, key);
    const paused = await chat(app, { message: GATED, thread_id: "t1" }, bearer(token));
    const { approval_id, digest } = paused.events.at(-1)!.data.approval as { approval_id: string; digest: string };
    exchangeStatus = 400;
    const res = await app.fetch(post(`/threads/t1/approvals/${approval_id}`, { decision: "approve", digest }, bearer(token)));
    const result = toolResult(parseSse(await res.text()));
    expect(result.is_error).toBe(true);
    expect(result.result).toBe("ApiPolicyError: the token issuer refused to exchange the caller's token for API orders; nothing was sent");
    expect(exchanges).toHaveLength(1);
    expect(upstream.hits).toEqual([]);
    const stored = (await store.getApproval(approval_id))!;
    expect(stored.status).toBe("approved");
    expect(stored.internal.executed_at).toBeNull();
    expect(stored.outcome).toBeNull();
    expect(await metric('agent_token_exchanges_total{api="orders",outcome="refused"}')).toBe(1);
  });

  it("a run resumed by a role approver has no token to exchange: refused, nothing sent", async () => {
    await start("['role:admin']");
    const paused = await chat(app, { message: GATED, thread_id: "t1" }, bearer(await mint({}, key)));
    const { approval_id, digest } = paused.events.at(-1)!.data.approval as { approval_id: string; digest: string };
    const admin = await mint({ sub: "root", roles: ["admin"] }, key);
    const res = await app.fetch(post(`/threads/t1/approvals/${approval_id}`, { decision: "approve", digest }, bearer(admin)));
    expect(res.status).toBe(200);
    const result = toolResult(parseSse(await res.text()));
    expect(result.is_error).toBe(true);
    expect(result.result).toMatch(/^ApiPolicyError: API orders needs the caller's own token/);
    expect(exchanges).toEqual([]);
    expect(upstream.hits).toEqual([]);
  });
});

describe("startup with an auth: exchange API (outside dev)", () => {
  const boot = (over: Record<string, string | undefined>) => makeApp(appEnv(over), { clock, policyText: POLICY(), tools: [createOrder] });

  it("refuses to start without the issuer's URL, client id or secret, naming each", async () => {
    for (const v of ["TOKEN_EXCHANGE_URL", "TOKEN_EXCHANGE_CLIENT_ID", "TOKEN_EXCHANGE_CLIENT_SECRET"])
      await expect(boot({ [v]: undefined }), v).rejects.toThrow(new RegExp(`apis\\.orders\\.auth exchange needs ${v}`));
  });

  it("refuses a plain-http issuer URL that is not loopback unless TOKEN_EXCHANGE_ALLOW_HTTP=true; https starts", async () => {
    await expect(boot({ TOKEN_EXCHANGE_URL: "http://issuer.example.test/token" })).rejects.toThrow(/TOKEN_EXCHANGE_URL must be https/);
    for (const over of [{ TOKEN_EXCHANGE_URL: "http://issuer.example.test/token", TOKEN_EXCHANGE_ALLOW_HTTP: "true" }, { TOKEN_EXCHANGE_URL: "https://issuer.example.test/token" }]) {
      app = await boot(over);
      await app.close();
    }
  });
});

describe("auth: exchange traced (TRACING_ENABLED, a tracer given to createApp)", () => {
  it("each exchange is token_exchange <api> under the tool call, with its outcome; the upstream's traceparent names the call's span; no token is on any span", async () => {
    const mem = memoryTracer();
    const token = await mint({}, key);
    const tools = [getTool("list_orders", "/orders")];
    app = await makeApp(appEnv({ TRACING_ENABLED: "true" }), { clock, store, policyText: POLICY(), tools, tracer: mem.tracer });
    const first = await chat(app, { message: "/call list_orders {}" }, bearer(token));
    expect(toolResult(first.events)).toMatchObject({ is_error: false });
    await chat(app, { message: "/call list_orders {}" }, bearer(token));
    exchangeStatus = 400;
    clock.t += 400_000; // past the cached token's life: the issuer is asked again and refuses
    await chat(app, { message: "/call list_orders {}" }, bearer(await mint({}, key)));

    const exchangesTraced = mem.spans().filter((s) => s.name === "token_exchange orders");
    expect(exchangesTraced.map((s) => s.attributes["agent.token_exchange.outcome"])).toEqual(["issued", "cached", "refused"]);
    const toolSpans = mem.spans().filter((s) => s.name === "execute_tool list_orders");
    for (const [i, span] of exchangesTraced.entries()) {
      expect(span.kind).toBe(2 /* SpanKind.CLIENT */);
      expect(span.parentSpanContext?.spanId).toBe(toolSpans[i]!.spanContext().spanId);
      expect(span.attributes["server.address"]).toBe("127.0.0.1");
    }
    expect(exchangesTraced[2]!.status.code).toBe(2 /* ERROR */);
    expect(exchangesTraced[2]!.attributes["error.type"]).toBe("refused");
    // auth: exchange is credentialed: under peers the call carries the trace context of its client span.
    const call = mem.spans().find((s) => s.name === "GET /orders")!;
    expect(upstream.hits.map((h) => h.headers.traceparent)).toContain(`00-${call.spanContext().traceId}-${call.spanContext().spanId}-01`);
    const text = mem.spans().map(everyText).join("\n");
    for (const secret of [token, EXCHANGED, "secret-a"]) expect(text).not.toContain(secret);
  });
});
