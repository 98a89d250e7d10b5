/**
 * Token exchange (spec 5.8, 6.2, 6.3) against a loopback token issuer that records every request:
 * the form and client authentication sent, the answers that are usable and those that are not,
 * the caller's token lifetime, the actor check, the cache (lifetime, LRU, shared exchanges,
 * remembered refusals) and the circuit breaker, with time moved through a fake Clock. Also the
 * metrics and log lines, which never hold a token, the scope or the client secret.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Principal } from "../../src/auth/principal.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics, type Metrics } from "../../src/observability/metrics.js";
import { type ApiPolicy, loadPolicy } from "../../src/policy/document.js";
import { createTokenExchanger, type TokenExchanger, type TokenExchangerOptions } from "../../src/policy/exchange.js";

// ---------------------------------------------------------------------------------------------
// The loopback issuer
// ---------------------------------------------------------------------------------------------

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  form: Record<string, string>;
}

type Reply = { status: number; body?: unknown; raw?: string; headers?: Record<string, string> };
/** A reply, or hold the request until `release()`, or drop the connection unanswered. */
type Answer = Reply | "hold" | "drop";

class LoopbackIssuer {
  server!: Server;
  url = "";
  seen: Seen[] = [];
  answer: (seen: Seen) => Answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" } }));
  /** What a held request is answered once released. */
  afterHold: Reply = issued(jwt({ sub: "u1", act: { sub: "agent" } }));
  private held: (() => void)[] = [];

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => void this.handle(req, res, body));
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/token`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    const seen = { method: req.method!, url: req.url!, headers: req.headers, form: Object.fromEntries(new URLSearchParams(body)) };
    this.seen.push(seen);
    const answer = this.answer(seen);
    if (answer === "drop") return void req.socket.destroy();
    if (answer === "hold") {
      await new Promise<void>((r) => this.held.push(r));
      return this.write(res, this.afterHold);
    }
    this.write(res, answer);
  }

  private write(res: ServerResponse, answer: Reply): void {
    if (res.destroyed) return;
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(answer.raw ?? (answer.body === undefined ? "" : JSON.stringify(answer.body)));
  }

  release(): void {
    for (const go of this.held.splice(0)) go();
  }

  async stop(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const b64 = (s: string) => Buffer.from(s).toString("base64url");
/** A compact JWT with a dummy signature: the exchanger reads it, never verifies it. */
const jwt = (payload: unknown) => `${b64(JSON.stringify({ alg: "ES256", typ: "JWT" }))}.${b64(JSON.stringify(payload))}.c2ln`;
const issued = (token: string, extra: Record<string, unknown> = { expires_in: 300 }): Reply => ({
  status: 200,
  body: { access_token: token, token_type: "Bearer", issued_token_type: "urn:ietf:params:oauth:token-type:access_token", ...extra },
});

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

const T0 = Date.parse("2026-11-22T12:00:00Z");
const clock = { t: T0, now: () => clock.t };
const advanceS = (s: number) => void (clock.t += s * 1000);

const policy = loadPolicy(`
apis:
  svc:
    base_url_env: SVC_URL
    auth: exchange
    exchange: { audience: svc-api, scope: "orders:read orders:write", resource: "https://svc.example.test/" }
    allowed_methods: [GET]
  plain:
    base_url_env: PLAIN_URL
    auth: exchange
    exchange: { audience: plain-api }
    allowed_methods: [GET]
  loose:
    base_url_env: LOOSE_URL
    auth: exchange
    exchange: { audience: loose-api, allow_actorless: true }
    allowed_methods: [GET]
`);
const api = (name: string): ApiPolicy => policy.apis.get(name)!;

const SECRET = "s3cr:et with spaces&more";
let counter = 0;
/** A caller with a fresh token of its own (`leftS` seconds to live; undefined: no exp). */
function caller(leftS: number | undefined = 3600): Principal {
  const raw = jwt({ sub: "u1", n: ++counter, exp: leftS === undefined ? undefined : Math.floor(clock.t / 1000) + leftS });
  return {
    id: "u1",
    roles: [],
    permissions: new Set(),
    attributes: {},
    credentials: {},
    actor: null,
    token: { raw, audiences: ["agent-api"], ...(leftS !== undefined ? { expiresAt: clock.t + leftS * 1000 } : {}) },
  };
}
const noToken: Principal = { id: "shared", roles: [], permissions: new Set(), attributes: {}, credentials: {}, actor: null };

const issuer = new LoopbackIssuer();
beforeAll(() => issuer.start());
afterAll(() => issuer.stop());

let lines: string[];
let metrics: Metrics;
/** Every init the exchanger handed fetch. */
let inits: (RequestInit & { connectTimeoutMs?: number })[];

function make(over: Partial<TokenExchangerOptions> = {}): TokenExchanger {
  return createTokenExchanger({
    url: issuer.url,
    clientId: "agent:one",
    clientSecret: SECRET,
    clientAuth: "client_secret_basic",
    subjectTokenType: "urn:ietf:params:oauth:token-type:access_token",
    timeoutMs: 2000,
    maxTtlS: 300,
    failureTtlS: 10,
    cacheMax: 100,
    fetch: (input, init) => {
      inits.push(init as never);
      return fetch(input, init);
    },
    clock,
    logger: createLogger({ level: "DEBUG", format: "json", write: (l) => lines.push(l), now: clock.now }),
    metrics,
    ...over,
  });
}

beforeEach(() => {
  clock.t = T0;
  issuer.release();
  issuer.seen = [];
  issuer.answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" } }));
  issuer.afterHold = issued(jwt({ sub: "u1", act: { sub: "agent" } }));
  lines = [];
  inits = [];
  metrics = createMetrics();
});

const outcomes = (name = "svc") =>
  Object.fromEntries(["issued", "cached", "refused", "no_actor", "unavailable", "circuit_open"].map((o) => [o, metrics.tokenExchanges.get({ api: name, outcome: o })]).filter(([, n]) => n !== 0));

async function refusal(p: Promise<unknown>): Promise<string> {
  const error = (await p.then(
    () => undefined,
    (e: unknown) => e,
  )) as { code?: string; message: string } | undefined;
  expect(error, "expected a refusal").toBeDefined();
  expect(error!.code).toBe("api_policy");
  return error!.message;
}

// ---------------------------------------------------------------------------------------------
// The request
// ---------------------------------------------------------------------------------------------

describe("the exchange request", () => {
  it("posts the RFC 8693 form with client_secret_basic (id and secret form-urlencoded) and returns the token", async () => {
    const token = jwt({ sub: "u1", act: { sub: "agent" } });
    issuer.answer = () => issued(token);
    const who = caller();
    expect(await make().tokenFor(api("svc"), who)).toBe(token);
    expect(issuer.seen).toHaveLength(1);
    const [seen] = issuer.seen;
    expect(seen!.method).toBe("POST");
    expect(seen!.url).toBe("/token");
    expect(seen!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(seen!.form).toEqual({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      subject_token: who.token!.raw,
      subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
      requested_token_type: "urn:ietf:params:oauth:token-type:access_token",
      audience: "svc-api",
      scope: "orders:read orders:write",
      resource: "https://svc.example.test/",
    });
    // RFC 6749 2.3.1: each part form-urlencoded, then joined with ':' and base64-encoded.
    const basic = Buffer.from(seen!.headers.authorization!.replace(/^Basic /, ""), "base64").toString();
    expect(basic).toBe("agent%3Aone:s3cr%3Aet+with+spaces%26more");
    const [id, secret] = basic.split(":").map((p) => new URLSearchParams(`x=${p}`).get("x"));
    expect([id, secret]).toEqual(["agent:one", SECRET]);
  });

  it("client_secret_post puts client_id and client_secret in the form, with no Authorization header", async () => {
    await make({ clientAuth: "client_secret_post", subjectTokenType: "urn:ietf:params:oauth:token-type:jwt" }).tokenFor(api("plain"), caller());
    const [seen] = issuer.seen;
    expect(seen!.headers.authorization).toBeUndefined();
    expect(seen!.form.client_id).toBe("agent:one");
    expect(seen!.form.client_secret).toBe(SECRET);
    expect(seen!.form.subject_token_type).toBe("urn:ietf:params:oauth:token-type:jwt");
    // No scope or resource when the API's exchange has none.
    expect(Object.keys(seen!.form).sort()).toEqual(
      ["audience", "client_id", "client_secret", "grant_type", "requested_token_type", "subject_token", "subject_token_type"].sort(),
    );
    expect(seen!.form.audience).toBe("plain-api");
  });

  it("hands fetch redirect manual and a connect timeout of at most 1 s", async () => {
    await make({ timeoutMs: 5000 }).tokenFor(api("svc"), caller());
    await make({ timeoutMs: 300 }).tokenFor(api("svc"), caller());
    expect(inits.map((i) => [i.redirect, i.connectTimeoutMs, i.method])).toEqual([
      ["manual", 1000, "POST"],
      ["manual", 300, "POST"],
    ]);
  });

  it("refuses with nothing sent when the caller has no token of its own", async () => {
    const message = await refusal(make().tokenFor(api("svc"), noToken));
    expect(message).toMatch(/API svc needs the caller's own token.*nothing was sent/);
    expect(issuer.seen).toEqual([]);
    expect(outcomes()).toEqual({ refused: 1 });
  });

  it("refuses with nothing sent when the caller's token has 10 s or less left; 11 s is exchanged", async () => {
    const x = make();
    for (const left of [10, 5, 0, -60]) expect(await refusal(x.tokenFor(api("svc"), caller(left)))).toMatch(/expires too soon.*nothing was sent/);
    expect(issuer.seen).toEqual([]);
    await x.tokenFor(api("svc"), caller(11));
    expect(issuer.seen).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------
// The answer
// ---------------------------------------------------------------------------------------------

describe("the answer", () => {
  const good = jwt({ sub: "u1", act: { sub: "agent" } });
  const unusable: [string, Answer][] = [
    ["not JSON", { status: 200, raw: "access_token=x" }],
    ["a JSON array", { status: 200, body: [good] }],
    ["no access_token", { status: 200, body: { token_type: "Bearer", expires_in: 60 } }],
    ["an empty access_token", issued("")],
    ["a token with a space", issued("a b")],
    ["a token over 16 KiB", issued(jwt({ sub: "u1", act: { sub: "agent" }, pad: "x".repeat(16400) }))],
    ["token_type N_A", issued(good, { token_type: "N_A", expires_in: 60 })],
    ["no token_type", { status: 200, body: { access_token: good, expires_in: 60 } }],
    ["expires_in 0", issued(good, { expires_in: 0 })],
    ["expires_in -5", issued(good, { expires_in: -5 })],
    ["expires_in 1.5", issued(good, { expires_in: 1.5 })],
    ["expires_in as text", issued(good, { expires_in: "60" })],
    ["expires_in null", issued(good, { expires_in: null })],
    ["a 201", { ...issued(good), status: 201 }],
    ["a 500", { status: 500, body: { error: "server_error" } }],
    ["a 503", { status: 503, body: {} }],
    ["a 429", { status: 429, body: { error: "slow_down" } }],
    ["a redirect", { status: 302, headers: { location: "/elsewhere" } }],
    ["a dropped connection", "drop"],
  ];

  it.each(unusable)("%s is unusable: unavailable, the issuer asked once, no token", async (_name, answer) => {
    issuer.answer = () => answer;
    const message = await refusal(make().tokenFor(api("svc"), caller()));
    expect(message).toMatch(/^the token issuer is unavailable, so no token for API svc was obtained; try again later; nothing was sent$/);
    expect(issuer.seen).toHaveLength(1); // a redirect is never followed
    expect(outcomes()).toEqual({ unavailable: 1 });
    expect(message).not.toContain(good);
  });

  it("a token of exactly 16384 bytes and token_type in any case are usable; 16385 bytes are not", async () => {
    const short = jwt({ sub: "u1", act: { sub: "agent" } });
    const exact = short + "A".repeat(16384 - short.length); // a longer signature part
    issuer.answer = () => issued(exact, { token_type: "bEaReR", expires_in: 60 });
    expect(await make().tokenFor(api("svc"), caller())).toBe(exact);
    issuer.answer = () => issued(`${exact}A`);
    expect(await refusal(make().tokenFor(api("svc"), caller()))).toMatch(/unavailable/);
  });

  it("the issuer's 4xx refusal is refused (nothing sent to the API) and remembered for the failure TTL", async () => {
    issuer.answer = () => ({ status: 400, body: { error: "invalid_grant" } });
    const x = make({ failureTtlS: 10 });
    const who = caller();
    const message = await refusal(x.tokenFor(api("svc"), who));
    expect(message).toBe("the token issuer refused to exchange the caller's token for API svc; nothing was sent");
    expect(await refusal(x.tokenFor(api("svc"), who))).toBe(message);
    advanceS(9);
    await refusal(x.tokenFor(api("svc"), who));
    expect(issuer.seen).toHaveLength(1);
    // Another caller is not refused by this one's refusal.
    issuer.answer = () => issued(jwt({ sub: "u2", act: { sub: "agent" } }));
    await x.tokenFor(api("svc"), caller());
    expect(issuer.seen).toHaveLength(2);
    advanceS(1);
    await x.tokenFor(api("svc"), who);
    expect(issuer.seen).toHaveLength(3);
    expect(outcomes()).toEqual({ refused: 3, issued: 2 });
  });

  it("a timeout is unavailable: the whole exchange is bounded by timeoutMs", async () => {
    issuer.answer = () => "hold";
    const started = Date.now();
    const message = await refusal(make({ timeoutMs: 150 }).tokenFor(api("svc"), caller()));
    expect(Date.now() - started).toBeLessThan(1500);
    expect(message).toMatch(/unavailable/);
    expect(outcomes()).toEqual({ unavailable: 1 });
  });

  it("an unreachable issuer is unavailable", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(await refusal(make({ url: `http://127.0.0.1:${port}/token` }).tokenFor(api("svc"), caller()))).toMatch(/unavailable/);
    expect(outcomes()).toEqual({ unavailable: 1 });
  });
});

// ---------------------------------------------------------------------------------------------
// The actor
// ---------------------------------------------------------------------------------------------

describe("the actor check", () => {
  const actorless: [string, string][] = [
    ["no act", jwt({ sub: "u1" })],
    ["act without sub", jwt({ sub: "u1", act: { client: "x" } })],
    ["act.sub empty", jwt({ sub: "u1", act: { sub: "" } })],
    ["act.sub a number", jwt({ sub: "u1", act: { sub: 7 } })],
    ["act a list", jwt({ sub: "u1", act: [{ sub: "agent" }] })],
    ["act null", jwt({ sub: "u1", act: null })],
    ["an opaque token", "opaque-access-token-123"],
    ["a payload that is not JSON", `${b64("{}")}.${b64("not json")}.c2ln`],
    ["five parts (an encrypted JWT)", "a.b.c.d.e"],
    ["duplicate act members", `${b64("{}")}.${b64('{"act":{"sub":"agent"},"act":{"sub":"other"}}')}.c2ln`],
  ];

  it.each(actorless)("%s: refused as no_actor, nothing sent, remembered", async (_name, token) => {
    issuer.answer = () => issued(token);
    const x = make();
    const who = caller();
    const message = await refusal(x.tokenFor(api("svc"), who));
    expect(message).toBe("the exchanged token for API svc names no actor, so it is not used; nothing was sent");
    await refusal(x.tokenFor(api("svc"), who));
    expect(issuer.seen).toHaveLength(1);
    expect(outcomes()).toEqual({ no_actor: 2 });
  });

  it("with allow_actorless the token is used and one WARNING is logged per API", async () => {
    const token = jwt({ sub: "u1" });
    issuer.answer = () => issued(token);
    const x = make();
    expect(await x.tokenFor(api("loose"), caller())).toBe(token);
    expect(await x.tokenFor(api("loose"), caller())).toBe(token);
    const warnings = lines.map((l) => JSON.parse(l)).filter((r) => r.level === "WARNING");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ api: "loose", message: expect.stringMatching(/no actor.*allow_actorless/) });
    expect(outcomes("loose")).toEqual({ issued: 2 });
    // A token that names an actor is no cause for a warning.
    issuer.answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" } }));
    await x.tokenFor(api("loose"), caller());
    expect(lines.map((l) => JSON.parse(l)).filter((r) => r.level === "WARNING")).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------
// The cache
// ---------------------------------------------------------------------------------------------

describe("the cache", () => {
  it("reuses a token per (API, caller's token) for min(expires_in, max TTL)", async () => {
    issuer.answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" }, n: issuer.seen.length }), { expires_in: 3600 });
    const x = make({ maxTtlS: 300 });
    const who = caller(7200);
    const first = await x.tokenFor(api("svc"), who);
    expect(await x.tokenFor(api("svc"), who)).toBe(first);
    expect(issuer.seen).toHaveLength(1);
    // Another API, or another caller's token, is another exchange.
    expect(await x.tokenFor(api("plain"), who)).not.toBe(first);
    await x.tokenFor(api("svc"), caller(7200));
    expect(issuer.seen).toHaveLength(3);
    advanceS(299);
    expect(await x.tokenFor(api("svc"), who)).toBe(first);
    expect(issuer.seen).toHaveLength(3);
    advanceS(1);
    expect(await x.tokenFor(api("svc"), who)).not.toBe(first);
    expect(issuer.seen).toHaveLength(4);
    expect(outcomes()).toEqual({ issued: 3, cached: 2 });
  });

  /** Exchanges for `who`, then checks the token is reused for exactly `seconds`, not one more. */
  async function expectReusedFor(x: TokenExchanger, who: Principal, seconds: number): Promise<void> {
    const before = issuer.seen.length;
    await x.tokenFor(api("svc"), who);
    advanceS(seconds - 1);
    await x.tokenFor(api("svc"), who);
    expect(issuer.seen.length).toBe(before + 1);
    advanceS(1);
    await x.tokenFor(api("svc"), who);
    expect(issuer.seen.length).toBe(before + 2);
  }

  it("expires_in shorter than the max TTL wins; absent it is 60 s", async () => {
    const x = make();
    issuer.answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" } }), { expires_in: 20 });
    await expectReusedFor(x, caller(), 20);
    issuer.answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" } }), {});
    await expectReusedFor(x, caller(), 60);
  });

  it("never reuses a token past the caller's token expiry less 30 s", async () => {
    const x = make();
    await expectReusedFor(x, caller(100), 70);
    // 25 s left (less than the 30 s margin): exchanged for this call, not kept.
    const short = caller(25);
    await x.tokenFor(api("svc"), short);
    await x.tokenFor(api("svc"), short);
    expect(issuer.seen).toHaveLength(4);
  });

  it("a caller's token without exp is reused for the max TTL", async () => {
    await expectReusedFor(make({ maxTtlS: 50 }), caller(undefined), 50);
  });

  it("keeps at most cacheMax tokens, the least recently used out first", async () => {
    const x = make({ cacheMax: 2 });
    const [a, b, c] = [caller(), caller(), caller()];
    await x.tokenFor(api("svc"), a);
    await x.tokenFor(api("svc"), b);
    await x.tokenFor(api("svc"), a); // a is now the most recent
    await x.tokenFor(api("svc"), c); // b falls out
    expect(issuer.seen).toHaveLength(3);
    await x.tokenFor(api("svc"), a);
    expect(issuer.seen).toHaveLength(3);
    await x.tokenFor(api("svc"), b);
    expect(issuer.seen).toHaveLength(4);
  });

  it("concurrent calls for one key share one exchange", async () => {
    issuer.answer = () => "hold";
    const x = make();
    const who = caller();
    const calls = Array.from({ length: 5 }, () => x.tokenFor(api("svc"), who));
    await waitFor(() => issuer.seen.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(issuer.seen).toHaveLength(1);
    issuer.release();
    const tokens = await Promise.all(calls);
    expect(new Set(tokens).size).toBe(1);
    expect(outcomes()).toEqual({ issued: 1, cached: 4 });
  });

  it("concurrent calls sharing a refused exchange are all refused, the issuer asked once", async () => {
    issuer.answer = () => ({ status: 403, body: { error: "access_denied" } });
    const x = make();
    const who = caller();
    const calls = Array.from({ length: 3 }, () => refusal(x.tokenFor(api("svc"), who)));
    expect(new Set(await Promise.all(calls)).size).toBe(1);
    expect(issuer.seen).toHaveLength(1);
    expect(outcomes()).toEqual({ refused: 3 });
  });
});

// ---------------------------------------------------------------------------------------------
// The circuit breaker
// ---------------------------------------------------------------------------------------------

describe("the circuit breaker", () => {
  const warnings = () => lines.map((l) => JSON.parse(l)).filter((r) => r.level === "WARNING");

  it("opens after three consecutive failures (one WARNING), refuses without asking, then lets one trial through", async () => {
    issuer.answer = () => ({ status: 500, body: {} });
    const x = make({ failureTtlS: 10 });
    for (let i = 0; i < 3; i++) await refusal(x.tokenFor(api("svc"), caller()));
    expect(issuer.seen).toHaveLength(3);
    expect(warnings()).toHaveLength(1);

    const open = await refusal(x.tokenFor(api("plain"), caller()));
    expect(open).toMatch(/token issuer is unavailable .*nothing was sent/);
    expect(issuer.seen).toHaveLength(3);
    expect(outcomes("plain")).toEqual({ circuit_open: 1 });

    // Half-open: one trial; a concurrent call is refused at once; the trial fails and it reopens.
    advanceS(10);
    issuer.answer = () => "hold";
    const trial = refusal(x.tokenFor(api("svc"), caller()));
    await waitFor(() => issuer.seen.length === 4);
    expect(await refusal(x.tokenFor(api("svc"), caller()))).toMatch(/failed repeatedly/);
    issuer.afterHold = { status: 502, body: {} };
    issuer.release();
    expect(await trial).toMatch(/^the token issuer is unavailable, so no token/);
    expect(await refusal(x.tokenFor(api("svc"), caller()))).toMatch(/failed repeatedly/);
    expect(issuer.seen).toHaveLength(4);
    expect(warnings()).toHaveLength(1);
    expect(outcomes()).toEqual({ unavailable: 4, circuit_open: 2 });
  });

  it("a failed trial reopens it for the failure TTL; a successful one closes it", async () => {
    issuer.answer = () => ({ status: 503, body: {} });
    const x = make({ failureTtlS: 5 });
    for (let i = 0; i < 3; i++) await refusal(x.tokenFor(api("svc"), caller()));
    advanceS(5);
    expect(await refusal(x.tokenFor(api("svc"), caller()))).toMatch(/^the token issuer is unavailable, so no token/); // the trial, sent
    expect(issuer.seen).toHaveLength(4);
    expect(await refusal(x.tokenFor(api("svc"), caller()))).toMatch(/failed repeatedly/); // open again
    advanceS(4);
    await refusal(x.tokenFor(api("svc"), caller()));
    expect(issuer.seen).toHaveLength(4);
    advanceS(1);
    issuer.answer = () => issued(jwt({ sub: "u1", act: { sub: "agent" } }));
    await x.tokenFor(api("svc"), caller()); // the trial succeeds: closed
    await x.tokenFor(api("svc"), caller());
    await x.tokenFor(api("svc"), caller());
    expect(issuer.seen).toHaveLength(7);
    expect(outcomes()).toEqual({ unavailable: 4, circuit_open: 2, issued: 3 });
    expect(warnings()).toHaveLength(1);
  });

  it("a success or an issuer's refusal between failures resets the count; cached tokens still serve while open", async () => {
    const x = make();
    const known = caller();
    await x.tokenFor(api("svc"), known);
    issuer.answer = () => ({ status: 500, body: {} });
    await refusal(x.tokenFor(api("svc"), caller()));
    await refusal(x.tokenFor(api("svc"), caller()));
    issuer.answer = () => ({ status: 401, body: { error: "invalid_client" } });
    await refusal(x.tokenFor(api("svc"), caller()));
    issuer.answer = () => ({ status: 500, body: {} });
    await refusal(x.tokenFor(api("svc"), caller()));
    await refusal(x.tokenFor(api("svc"), caller()));
    expect(outcomes().circuit_open).toBeUndefined();
    await refusal(x.tokenFor(api("svc"), caller()));
    expect(await refusal(x.tokenFor(api("svc"), caller()))).toMatch(/failed repeatedly/);
    expect(await x.tokenFor(api("svc"), known)).toMatch(/\./);
    expect(issuer.seen).toHaveLength(7);
  });
});

// ---------------------------------------------------------------------------------------------
// Logs and metrics
// ---------------------------------------------------------------------------------------------

describe("logs and metrics", () => {
  it("one INFO line per exchange sent (api, outcome, status, duration_ms), none for cached or local refusals; never a secret", async () => {
    const token = jwt({ sub: "u1", act: { sub: "agent" } });
    issuer.answer = () => issued(token);
    const x = make();
    const who = caller();
    await x.tokenFor(api("svc"), who);
    await x.tokenFor(api("svc"), who);
    await refusal(x.tokenFor(api("svc"), noToken));
    issuer.answer = () => ({ status: 400, body: { error: "invalid_grant" } });
    await refusal(x.tokenFor(api("plain"), who));
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toHaveLength(2);
    for (const r of records) {
      expect(Object.keys(r).sort()).toEqual(["api", "duration_ms", "level", "logger", "message", "outcome", "request_id", "status", "ts"]);
      expect(r.level).toBe("INFO");
      expect(r.message).toBe("token exchange");
      expect(typeof r.duration_ms).toBe("number");
    }
    expect(records.map((r) => [r.api, r.outcome, r.status])).toEqual([
      ["svc", "issued", 200],
      ["plain", "refused", 400],
    ]);
    const all = lines.join("\n");
    for (const secret of [token, who.token!.raw, SECRET, "orders:read", "svc.example.test"]) expect(all).not.toContain(secret);
  });

  it("writes the exchange's line to the logger it is given (the run's)", async () => {
    const runLines: string[] = [];
    const runLogger = createLogger({ level: "INFO", format: "json", write: (l) => runLines.push(l) }).child({ run_id: "r1" });
    await make().tokenFor(api("svc"), caller(), runLogger);
    expect(runLines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ run_id: "r1", message: "token exchange", outcome: "issued" })]);
    expect(lines).toEqual([]);
  });

  it("renders agent_token_exchanges_total by api and outcome and the duration histogram of exchanges sent", async () => {
    const x = make();
    const who = caller();
    await x.tokenFor(api("svc"), who);
    await x.tokenFor(api("svc"), who);
    await refusal(x.tokenFor(api("svc"), noToken));
    const text = metrics.render();
    expect(text).toContain("# TYPE agent_token_exchanges_total counter");
    expect(text).toContain('agent_token_exchanges_total{api="svc",outcome="issued"} 1');
    expect(text).toContain('agent_token_exchanges_total{api="svc",outcome="cached"} 1');
    expect(text).toContain('agent_token_exchanges_total{api="svc",outcome="refused"} 1');
    expect(text).toContain("# TYPE agent_token_exchange_duration_seconds histogram");
    expect(text).toContain('agent_token_exchange_duration_seconds_count{api="svc"} 1');
    expect(text).toMatch(/agent_token_exchange_duration_seconds_bucket\{api="svc",le="\+Inf"\} 1/);
  });
});

async function waitFor(check: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("waitFor: condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}
