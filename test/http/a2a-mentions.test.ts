import { afterEach, describe, expect, it } from "vitest";
import { ORIGIN_EXTENSION_URI } from "../../src/a2a/service.js";
import { ACTIONS, defineTool, type Principal } from "../../src/index.js";
import { makeApp, type TestApp } from "../helpers.js";

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
