import { afterEach, describe, expect, it } from "vitest";
import { ORIGIN_EXTENSION_URI } from "../../src/a2a/service.js";
import { ACTIONS, defineTool, type Principal } from "../../src/index.js";
import { makeApp, parseSse, type TestApp } from "../helpers.js";
import { ordersPolicy } from "../support/orders.js";

/** require_user_mentioned as tools see it: which words count as the user's own (A2A_DELEGATED_MENTIONS). */
const mentions = defineTool({
  name: "mentions",
  description: "says whether the user named alice",
  parameters: { type: "object" },
  calls: [],
  run: (_args, ctx) => String(ctx.userMentioned("Alice")),
});
const person = (actor: string | null): Principal => ({
  id: "u1",
  roles: [],
  permissions: new Set(ACTIONS),
  attributes: {},
  credentials: {},
  actor: actor ? { id: actor, chain: [], client: null } : null,
});
const authPolicy = { authenticate: (r: Request) => person(r.headers.get("authorization") === "Bearer agent" ? "agent-a" : null) };

let app: TestApp;
afterEach(async () => app?.close());

async function ask(who: string, text: string, origin?: string) {
  const metadata = origin ? { [ORIGIN_EXTENSION_URI]: { origin: { text: origin, truncated: false, hops: 1 } } } : undefined;
  const res = await app.fetch(
    new Request("http://test/a2a/app", {
      method: "POST",
      headers: { Authorization: `Bearer ${who}`, "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text }], ...(metadata ? { metadata } : {}) } } }),
    }),
  );
  const body = (await res.json()) as { result: { task: { artifacts: { parts: { text: string }[] }[] } } };
  return body.result.task.artifacts[0]!.parts[0]!.text;
}

describe("A2A_DELEGATED_MENTIONS", () => {
  it("reads the user's own message for a direct caller", async () => {
    app = await makeApp({ AUTH_ALLOWED_ACTORS: "agent-a" }, { tools: [mentions], authPolicy });
    expect(await ask("user", "send it to Alice\n/call mentions {}")).toBe("done: true");
  });

  it("origin (default): a delegated request counts only the forwarded origin words", async () => {
    app = await makeApp({ AUTH_ALLOWED_ACTORS: "agent-a" }, { tools: [mentions], authPolicy });
    expect(await ask("agent", "send it to Alice\n/call mentions {}")).toBe("done: false");
    expect(await ask("agent", "send it\n/call mentions {}", "please pay alice")).toBe("done: true");
  });

  it("request: the agent's request text counts", async () => {
    app = await makeApp({ AUTH_ALLOWED_ACTORS: "agent-a", A2A_DELEGATED_MENTIONS: "request" }, { tools: [mentions], authPolicy });
    expect(await ask("agent", "send it to Alice\n/call mentions {}")).toBe("done: true");
  });

  it("refuse: nothing a delegated caller sends counts", async () => {
    app = await makeApp({ AUTH_ALLOWED_ACTORS: "agent-a", A2A_DELEGATED_MENTIONS: "refuse" }, { tools: [mentions], authPolicy });
    expect(await ask("agent", "send it to Alice\n/call mentions {}", "pay alice")).toBe("done: false");
  });
});

describe("delegated requests are framed the same on every path", () => {
  /** A model that records the system prompt of every request and otherwise plays the fake model's part. */
  async function recordingApp(env: Record<string, string>, tools = [mentions]) {
    const { createFakeModel } = await import("../../src/agent/providers/fake.js");
    const fake = createFakeModel();
    const systems: string[] = [];
    const model = { ...fake, stream: (request: Parameters<typeof fake.stream>[0]) => (systems.push(request.system), fake.stream(request)) };
    app = await makeApp({ AUTH_ALLOWED_ACTORS: "agent-a", ORDERS_URL: "http://127.0.0.1:9/", ...env }, { tools, authPolicy, model, policyText: ordersPolicy() });
    return systems;
  }
  const chatAs = async (who: string, message: string, thread: string) => {
    const res = await app.fetch(new Request("http://test/chat", { method: "POST", headers: { Authorization: `Bearer ${who}`, "Content-Type": "application/json" }, body: JSON.stringify({ message, thread_id: thread }) }));
    return parseSse(await res.text());
  };

  it("POST /chat from an agent gets the caller note and A2A_DELEGATED_MENTIONS, as A2A does", async () => {
    const systems = await recordingApp({});
    const events = await chatAs("agent", "send it to Alice\n/call mentions {}", "c1");
    expect(events.find((e) => e.event === "tool.result")!.data.result).toBe("false");
    expect(systems[0]).toContain("Another agent (agent-a) wrote this request on behalf of the user.");
    const direct = await chatAs("user", "send it to Alice\n/call mentions {}", "c2");
    expect(direct.find((e) => e.event === "tool.result")!.data.result).toBe("true");
    expect(systems.at(-1)).not.toContain("Another agent");
  });

  it("A2A_DELEGATED_MENTIONS=request and A2A_CALLER_NOTE=off reach POST /chat too", async () => {
    const systems = await recordingApp({ A2A_DELEGATED_MENTIONS: "request", A2A_CALLER_NOTE: "off" });
    const events = await chatAs("agent", "send it to Alice\n/call mentions {}", "c3");
    expect(events.find((e) => e.event === "tool.result")!.data.result).toBe("true");
    expect(systems[0]).not.toContain("Another agent");
  });

  it("a run resumed after a decision keeps the note and never widens what the first run allowed", async () => {
    const gatedMention = defineTool({
      name: "gated_mention",
      description: "a gated call, then whether the user named alice",
      parameters: { type: "object" },
      calls: [{ api: "orders", method: "POST", path: "/orders" }],
      run: async (_args, ctx) => {
        const mentioned = ctx.userMentioned("Alice");
        await ctx.api.request("orders", { method: "POST", path: "/orders", body: { item: "x" } }).catch(() => undefined);
        return String(mentioned);
      },
    });
    const systems = await recordingApp({}, [gatedMention]);
    const paused = await chatAs("agent", "send it to Alice\n/call gated_mention {}", "r1");
    const end = paused.at(-1)!;
    expect(end.data.status).toBe("awaiting_approval");
    const id = (end.data.approval as { approval_id: string }).approval_id;
    const res = await app.fetch(new Request(`http://test/threads/r1/approvals/${id}`, { method: "POST", headers: { Authorization: "Bearer user", "Content-Type": "application/json" }, body: JSON.stringify({ decision: "reject" }) }));
    const resumed = parseSse(await res.text());
    expect(resumed.find((e) => e.event === "tool.result")!.data.result).toBe("false");
    expect(systems.at(-1)).toContain("Another agent (agent-a) wrote this request on behalf of the user.");
  });
});
