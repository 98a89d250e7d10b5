/**
 * Peer calls refused before anything is sent (spec 5.8; README "Agents calling agents"): an agent
 * already in the delegation chain, this agent itself (TOKEN_EXCHANGE_CLIENT_ID, or its own A2A
 * URL), and outside dev a credential over plain http to a host that is not loopback, single-label
 * or `.svc`. A's outbound fetch records every call; where a call is allowed it answers 503, so no
 * peer (and no DNS) is needed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { defineTool } from "../../src/agent/tools/define.js";
import { chat, KEY, makeApp, type SseEvent, type TestApp } from "../helpers.js";
import { peerPolicy } from "../support/a2a-peers.js";
import { served, type Served } from "../support/served.js";
import { actor, bearerWordPolicy } from "./support/principals.js";

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

/** A with a fetch that records each URL and answers 503 (nothing leaves the process). */
async function agentA(policy: string, env: Record<string, string>, options: Parameters<typeof makeApp>[1] = {}) {
  const urls: string[] = [];
  const app = await makeApp({ PEER_TOKEN: KEY, ...env }, { policyText: policy, tools: [], fetch: async (input) => (urls.push(String(input)), new Response("down", { status: 503 })), ...options });
  opened.push(app);
  return { app, urls };
}

const result = (events: SseEvent[]) => events.find((e) => e.event === "tool.result")!.data as { result: string; is_error: boolean };
const ASK = '/call ask_b {"message":"hello"}';

/** API b reached with tokens exchanged for the audience `agent-b`: its agent id is agent-b. */
const exchangePolicy = `
apis:
  b:
    protocol: a2a
    a2a: { path: /a2a/app }
    base_url_env: B_URL
    auth: exchange
    exchange: { audience: agent-b }
    allowed_methods: [GET, POST]
    approval:
      required_for: { operations: [{ a2a_operation: approve }] }
      approvers: [requester]
`;
const EXCHANGE_ENV = { TOKEN_EXCHANGE_URL: "http://127.0.0.1:9/token", TOKEN_EXCHANGE_CLIENT_ID: "agent-a", TOKEN_EXCHANGE_CLIENT_SECRET: "s", B_URL: "http://127.0.0.1:9" };

describe("the delegation chain and this agent", () => {
  const authPolicy = bearerWordPolicy({
    direct: { id: "u1" },
    viaB: { id: "u1", actor: actor("agent-b") },
    viaBThenC: { id: "u1", actor: { id: "agent-c", chain: ["agent-b"], client: null } },
  });
  const as = (word: string) => ({ Authorization: `Bearer ${word}` });
  const ask = async (app: TestApp, word: string) => (await chat(app, { message: ASK }, as(word))).events;

  it("a peer whose agent id (exchange.audience) is the actor, or an earlier agent of the chain, is refused; nothing is sent", async () => {
    const a = await agentA(exchangePolicy, { ...EXCHANGE_ENV, AUTH_POLICY: "custom", AUTH_ALLOWED_ACTORS: "*" }, { authPolicy });
    for (const word of ["viaB", "viaBThenC"]) {
      const events = await ask(a.app, word);
      expect(result(events)).toMatchObject({ is_error: true });
      expect(result(events).result).toMatch(/^ApiPolicyError: API b is the agent agent-b, already in the delegation chain .*nothing was sent/);
    }
    expect(a.urls).toEqual([]);
    // The user calling directly passes that check; the policy client then finds no token of theirs to exchange.
    const events = await ask(a.app, "direct");
    expect(result(events).result).toMatch(/^ApiPolicyError: API b needs the caller's own token to exchange/);
    expect(a.urls).toEqual([]);
  });

  it("a peer whose agent id is TOKEN_EXCHANGE_CLIENT_ID is this agent: refused, nothing sent", async () => {
    const a = await agentA(exchangePolicy, { ...EXCHANGE_ENV, TOKEN_EXCHANGE_CLIENT_ID: "agent-b", AUTH_POLICY: "custom" }, { authPolicy });
    const events = await ask(a.app, "direct");
    expect(result(events).result).toMatch(/^ApiPolicyError: API b is this agent \(agent-b\)/);
    expect(a.urls).toEqual([]);
  });

  it("holds for a tool's own calls through ctx.api.request, not only the peer tools': refused before the exchange, nothing sent", async () => {
    const rawB = defineTool({
      name: "raw_b",
      description: "sends a message to b itself",
      parameters: { type: "object" },
      calls: [{ api: "b", method: "POST", path: "/a2a/app", rpc_method: "SendMessage" }],
      run: async (_args, ctx) => {
        const body = { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hi" }] } } };
        return (await ctx.api.request("b", { method: "POST", path: "/a2a/app", body })).status;
      },
    });
    const raw = async (env: Record<string, string>, word: string) => {
      const a = await agentA(exchangePolicy, { ...EXCHANGE_ENV, AUTH_POLICY: "custom", AUTH_ALLOWED_ACTORS: "*", ...env }, { authPolicy, tools: [rawB] });
      const { events } = await chat(a.app, { message: "/call raw_b {}" }, as(word));
      return { result: result(events), urls: a.urls };
    };
    for (const word of ["viaB", "viaBThenC"]) {
      const { result: r, urls } = await raw({}, word);
      expect(r.result, word).toMatch(/^ApiPolicyError: API b is the agent agent-b, already in the delegation chain .*nothing was sent/);
      expect(urls).toEqual([]);
    }
    const self = await raw({ TOKEN_EXCHANGE_CLIENT_ID: "agent-b" }, "direct");
    expect(self.result.result).toMatch(/^ApiPolicyError: API b is this agent \(agent-b\)/);
    expect(self.urls).toEqual([]);
    // The user calling directly passes it; the client then finds no token of theirs to exchange.
    expect((await raw({}, "direct")).result.result).toMatch(/^ApiPolicyError: API b needs the caller's own token to exchange/);
  });

  it("a peer whose endpoint is this service's own A2A URL is refused; the service hears nothing", async () => {
    const self: Served = await served((base) => makeApp({ APP_URL: base, PEER_TOKEN: KEY, ME_URL: base }, { policyText: peerPolicy("me", "ME_URL", "/a2a/app"), tools: [] }));
    opened.push(self);
    const { events } = await chat(self.app, { message: '/call ask_me {"message":"hi me"}' });
    expect(result(events).result).toMatch(/^ApiPolicyError: API me is this agent's own A2A endpoint/);
    expect(self.requests).toEqual([]);
  });
});

describe("a credential over plain http outside dev", () => {
  const policy = peerPolicy("b", "B_URL", "/a2a/app");
  const card = (base: string) => `${base}/a2a/app/.well-known/agent-card.json`;

  it("to a host that is not loopback, single-label or .svc: refused before anything is sent", async () => {
    const a = await agentA(policy, { B_URL: "http://agents.example.test:8080" });
    const { events } = await chat(a.app, { message: ASK });
    expect(result(events).result).toMatch(/^ApiPolicyError: API b would send a credential over plain http .*nothing was sent/);
    expect(a.urls).toEqual([]);
  });

  it("goes out under APP_ENV=dev, over https, and to loopback, single-label and .svc hosts", async () => {
    const cases: [string, Record<string, string>][] = [
      ["http://agents.example.test:8080", { APP_ENV: "dev" }],
      ["https://agents.example.test", {}],
      ["http://127.0.0.5:9", {}],
      ["http://[::1]:9", {}],
      ["http://localhost:9", {}],
      ["http://planner:8000", {}],
      ["http://planner.agents.svc", {}],
      ["http://planner.agents.svc.cluster.local:8000", {}],
    ];
    for (const [base, env] of cases) {
      const a = await agentA(policy, { B_URL: base, ...env });
      const { events } = await chat(a.app, { message: ASK });
      expect(result(events).result, base).toMatch(/could not be read \(HTTP 503\)/);
      expect(a.urls).toEqual([card(base)]);
    }
  });
});
