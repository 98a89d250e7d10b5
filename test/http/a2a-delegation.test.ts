/**
 * Agents calling agents for a user (spec 2.3, 5.6-5.8; CONTRACT 6), with three real instances on
 * loopback: the user signs in at A; A asks B with a token exchanged at a loopback RFC 8693 issuer
 * (subject the user, actor A); B calls a gated API. With a relayed rule at B the person decides
 * at A and the decision travels to B; with a direct rule at B the person decides at B. A -> B -> A
 * is refused before anything reaches A. A recording upstream proves the call is sent once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chat, get, makeApp, post, readUntil } from "../helpers.js";
import { createOrder, ordersPolicy } from "../support/orders.js";
import { slot, type Served } from "../support/served.js";
import { startTokenIssuer, type TokenIssuer } from "../support/token-issuer.js";
import { recordingUpstream } from "../support/upstream.js";

const upstream = recordingUpstream();
let issuer: TokenIssuer;
const instances: Served[] = [];

beforeAll(async () => {
  issuer = await startTokenIssuer();
  issuer.clients.set("agent-a", "secret-a");
  issuer.clients.set("agent-b", "secret-b");
});
afterAll(async () => {
  for (const s of instances) await s.close();
  await issuer?.close();
});

/** The environment of an instance signing people in with the loopback issuer's tokens for `audience`. */
const jwtEnv = (audience: string, client: string, extra: Record<string, string> = {}) => ({
  AUTH_POLICY: "jwt",
  AUTH_JWT_JWKS_URL: issuer.jwksUrl,
  AUTH_JWT_ISSUER: issuer.issuer,
  AUTH_JWT_AUDIENCE: audience,
  TOKEN_EXCHANGE_URL: issuer.tokenUrl,
  TOKEN_EXCHANGE_CLIENT_ID: client,
  TOKEN_EXCHANGE_CLIENT_SECRET: `secret-${client.slice(-1)}`,
  ...extra,
});

/** A peer API reached over A2A with an exchanged token; approve messages wait for the requester. */
const peerApi = (name: string, env: string, audience: string) => `
  ${name}:
    protocol: a2a
    a2a: { path: /a2a/app }
    base_url_env: ${env}
    auth: exchange
    exchange: { audience: ${audience} }
    allowed_methods: [GET, POST]
    approval:
      required_for: { operations: [{ a2a_operation: approve }] }
      approvers: [requester]
      timeout_s: 600
`;

/** B, and A pointing at it. */
async function pair(rule: "relayed" | "direct", options: { bAsksA?: boolean } = {}) {
  const [aSlot, bSlot] = [await slot(), await slot()];
  const b = await bSlot.start((base) =>
    makeApp(jwtEnv("agent-b", "agent-b", { APP_URL: base, AUTH_ALLOWED_ACTORS: "agent-a", ORDERS_URL: upstream.base, ...(options.bAsksA ? { A_URL: aSlot.base } : {}) }), {
      tools: [createOrder],
      policyText: `${ordersPolicy(rule === "relayed" ? { relayers: ["agent-a"] } : {})}${options.bAsksA ? peerApi("a", "A_URL", "agent-a") : ""}`,
    }),
  );
  instances.push(b);
  const a = await aSlot.start((base) =>
    makeApp(jwtEnv("agent-a", "agent-a", { APP_URL: base, B_URL: b.base }), { tools: [], policyText: `apis:\n${peerApi("b", "B_URL", "agent-b")}` }),
  );
  instances.push(a);
  return { a, b };
}

const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
/** A's user message: the fake model asks B, whose fake model reads `inner` as its own directives. */
const askB = (inner: string) => `/call ask_b ${JSON.stringify({ message: inner })}`;
const ORDER = '/call create_order {"item":"book"}';

describe("user -> A -> B -> a gated API on B, relayed through A", () => {
  it("B pauses; A asks the user with nested and effect; approving at A sends B's call exactly once, decided via A", async () => {
    const { a, b } = await pair("relayed");
    upstream.hits.length = 0;
    const userAtA = await issuer.userToken("alice", "agent-a");

    const { res, events } = await chat(a.app, { message: askB(ORDER) }, auth(userAtA));
    expect(res.status).toBe(200);
    const end = events.at(-1)!;
    expect(end).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
    const threadId = (end.data as { thread_id: string }).thread_id;
    expect(upstream.hits).toEqual([]);

    // The exchange: A's client, B's audience, the user's own token as subject.
    const exchange = issuer.exchanges.at(-1)!;
    expect(exchange.client).toBe("agent-a");
    expect(exchange.form).toMatchObject({ audience: "agent-b", subject_token: userAtA, grant_type: "urn:ietf:params:oauth:grant-type:token-exchange" });

    // B holds its own approval for alice through agent-a.
    const userAtB = await issuer.userToken("alice", "agent-b");
    const atB = (await (await b.app.fetch(get("/approvals", auth(userAtB)))).json()) as Record<string, any>[];
    expect(atB).toHaveLength(1);
    expect(atB[0]).toMatchObject({ status: "pending", requester_actor: "agent-a", decide_with: "relayed", relayers: ["agent-a"], method: "POST", path: "/orders" });

    // A's approval shows B's (nested) and the call that will really happen (effect).
    const atA = (await (await a.app.fetch(get(`/threads/${threadId}/approvals`, auth(userAtA)))).json()) as Record<string, any>[];
    expect(atA).toHaveLength(1);
    const mine = atA[0]!;
    expect(mine).toMatchObject({
      status: "pending",
      api: "b",
      method: "POST",
      path: "/a2a/app",
      rpc_method: "SendMessage",
      a2a_operation: "approve",
      nested: { agent: "b", approval_id: atB[0]!.approval_id, digest: atB[0]!.digest, decide_with: "relayed", call: { api: "orders", method: "POST", path: "/orders", body: { item: "book" } } },
      effect: { agent: "b", via: [], api: "orders", method: "POST", path: "/orders", body: { item: "book" } },
    });
    expect(Date.parse(mine.expires_at)).toBeLessThanOrEqual(Date.parse(atB[0]!.expires_at) - 5_000);

    // The person approves at A; A's run resumes, relays the decision, and reads B's outcome.
    const decided = await a.app.fetch(post(`/threads/${threadId}/approvals/${mine.approval_id}`, { decision: "approve", digest: mine.digest }, auth(userAtA)));
    expect(decided.status).toBe(200);
    const { events: resumed } = await readUntil(decided, (evs) => evs.some((e) => e.event === "message.end" || e.event === "error"));
    expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    const result = resumed.find((e) => e.event === "tool.result")!.data as { result: string; is_error: boolean };
    expect(result.is_error).toBe(false);
    expect(JSON.parse(result.result)).toMatchObject({ state: "completed" });

    expect(upstream.hits.filter((h) => h.method === "POST" && h.url === "/orders")).toHaveLength(1);
    const [afterB] = (await (await b.app.fetch(get("/approvals", auth(userAtB)))).json()) as Record<string, any>[];
    expect(afterB).toMatchObject({ status: "approved", decided_via: "agent-a" });
    const [afterA] = (await (await a.app.fetch(get(`/threads/${threadId}/approvals`, auth(userAtA)))).json()) as Record<string, any>[];
    // Decided: the nested calls' query and body are gone.
    expect(afterA).toMatchObject({ status: "approved", nested: { call: { body: null, query: null } }, effect: { body: null, query: null } });
  });
});

describe("user -> A -> B with a direct rule at B", () => {
  it("A asks nothing (needs_direct_approval); the user decides at B and B sends the call once", async () => {
    const { a, b } = await pair("direct");
    upstream.hits.length = 0;
    const userAtA = await issuer.userToken("alice", "agent-a");
    const { events } = await chat(a.app, { message: askB(ORDER) }, auth(userAtA));
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    const result = JSON.parse((events.find((e) => e.event === "tool.result")!.data as { result: string }).result);
    expect(result).toMatchObject({ state: "input-required", needs_direct_approval: true });
    const threadId = (events.at(-1)!.data as { thread_id: string }).thread_id;
    expect(await (await a.app.fetch(get(`/threads/${threadId}/approvals`, auth(userAtA)))).json()).toEqual([]);

    const userAtB = await issuer.userToken("alice", "agent-b");
    const [pending] = (await (await b.app.fetch(get("/approvals", auth(userAtB)))).json()) as Record<string, any>[];
    expect(pending).toMatchObject({ status: "pending", decide_with: "direct" });
    const decided = await b.app.fetch(post(`/threads/${pending!.thread_id}/approvals/${pending!.approval_id}`, { decision: "approve" }, auth(userAtB)));
    expect(decided.status).toBe(200);
    const { events: resumed } = await readUntil(decided, (evs) => evs.some((e) => e.event === "message.end" || e.event === "error"));
    expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(upstream.hits.filter((h) => h.method === "POST" && h.url === "/orders")).toHaveLength(1);
    const [after] = (await (await b.app.fetch(get("/approvals", auth(userAtB)))).json()) as Record<string, any>[];
    expect(after).toMatchObject({ status: "approved", decided_via: null });
  });
});

describe("A -> B -> A", () => {
  it("is refused at B before anything is sent to A", async () => {
    const { a, b } = await pair("relayed", { bAsksA: true });
    const userAtA = await issuer.userToken("alice", "agent-a");
    const before = a.requests.length;
    const exchangesBefore = issuer.exchanges.length;
    const { events } = await chat(a.app, { message: askB('/call ask_a {"message":"hello again"}') }, auth(userAtA));
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    // A's own /chat is the only request A saw; B's ask_a failed with the chain refusal.
    expect(a.requests.slice(before).filter((r) => r.startsWith("POST /a2a") || r.includes("agent-card"))).toEqual([]);
    expect(b.requests.some((r) => r === "POST /a2a/app")).toBe(true);
    // Only A's exchange for B happened: B never exchanged a token to call A.
    expect(issuer.exchanges.slice(exchangesBefore).map((e) => e.client)).toEqual(["agent-a"]);
    const askA = JSON.parse((events.find((e) => e.event === "tool.result")!.data as { result: string }).result);
    expect(JSON.stringify(askA)).toMatch(/delegation chain|already/i);
  });
});
