import { afterEach, describe, expect, it } from "vitest";
import { KEY, makeApp, type TestApp } from "../helpers.js";

let app: TestApp;
afterEach(async () => app?.close());

type Example = { summary?: string; value: unknown; "x-headers"?: Record<string, string> };
type Operation = {
  "x-auth-action"?: string;
  "x-a2a-methods"?: { method: string; v03: string | null; streaming: boolean }[];
  parameters?: { name: string; in: string; required?: boolean; example?: unknown }[];
  requestBody?: { content: Record<string, { schema: { properties: Record<string, { enum?: string[] }>; required: string[] }; examples?: Record<string, Example> }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
};
type Doc = { paths: Record<string, Record<string, Operation>> };
const openApi = async (a: TestApp) => (await (await a.fetch(new Request("http://test/openapi.json"))).json()) as Doc;

describe("the dev docs, the A2A routes and the playground", () => {
  it("describes the three approval routes with the decision body from the validating schema", async () => {
    app = await makeApp({ APP_ENV: "dev" });
    const doc = await openApi(app);

    const thread = doc.paths["/threads/{thread_id}/approvals"]?.get;
    expect(thread?.["x-auth-action"]).toBe("approval.read");
    const across = doc.paths["/approvals"]?.get;
    expect(across?.["x-auth-action"]).toBe("approval.read");
    expect(across?.parameters?.map((p) => `${p.in}:${p.name}`).sort()).toEqual(["query:limit", "query:offset", "query:status"]);

    const decide = doc.paths["/threads/{thread_id}/approvals/{approval_id}"]?.post;
    expect(decide?.["x-auth-action"]).toBe("approval.decide");
    const body = decide!.requestBody!.content["application/json"]!.schema;
    expect(body.properties.decision?.enum).toEqual(["approve", "reject"]);
    expect(Object.keys(body.properties).sort()).toEqual(["comment", "decision", "digest"]);
    expect(body.required).toEqual(["decision"]);
    expect(Object.keys(decide!.responses["200"]!.content!).sort()).toEqual(["application/json", "text/event-stream"]);
    for (const status of ["403", "404", "409", "410", "422"]) expect(decide!.responses[status], status).toBeDefined();
    expect(JSON.stringify(decide!.responses["409"])).toContain("approval_digest_mismatch");

    expect(JSON.stringify(doc.paths["/chat"]!.post!.responses["409"])).toContain("approval_pending");
  });

  it("lists the A2A card and JSON-RPC routes with each method, and every example it gives is a request the service reads", async () => {
    app = await makeApp({ APP_ENV: "dev", A2A_NAME: "helper" });
    const doc = await openApi(app);
    const card = doc.paths["/a2a/{agent}/.well-known/agent-card.json"]?.get;
    expect(card?.["x-auth-action"]).toBe("card.read");
    expect(card?.parameters?.find((p) => p.in === "path")?.example).toBe("helper");
    const rpc = doc.paths["/a2a/{agent}"]!.post!;
    expect(rpc["x-auth-action"]).toBe("a2a.invoke");
    expect(rpc["x-a2a-methods"]!.map((m) => `${m.method}/${m.v03}/${m.streaming}`)).toEqual([
      "SendMessage/message/send/false",
      "SendStreamingMessage/message/stream/true",
      "GetTask/tasks/get/false",
      "ListTasks/tasks/list/false",
      "CancelTask/tasks/cancel/false",
      "SubscribeToTask/tasks/resubscribe/true",
    ]);
    const examples = rpc.requestBody!.content["application/json"]!.examples!;
    const sent = Object.values(examples).map((e) => (e.value as { method: string }).method);
    for (const m of rpc["x-a2a-methods"]!) expect(sent, m.method).toContain(m.method);

    // Each example, sent as the docs show it: a JSON-RPC answer, never a malformed request or an unknown method.
    for (const [name, example] of Object.entries(examples)) {
      const res = await app.fetch(
        new Request("http://test/a2a/helper", {
          method: "POST",
          headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", ...example["x-headers"] },
          body: JSON.stringify(example.value),
        }),
      );
      expect(res.status, name).toBe(200);
      const text = await res.text();
      const first = JSON.parse(res.headers.get("content-type")!.includes("text/event-stream") ? text.split("\n").find((l) => l.startsWith("data:"))!.slice(5) : text) as { error?: { code: number } };
      // Unknown task ids (TASK_ID) are -32001: the request itself was read.
      if (first.error) expect([-32001, -32002, -32004], `${name}: ${JSON.stringify(first.error)}`).toContain(first.error.code);
    }
  });

  it("gives every route a request example: path parameters and JSON bodies", async () => {
    app = await makeApp({ APP_ENV: "dev" });
    const doc = await openApi(app);
    for (const [path, operations] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(operations)) {
        for (const p of op.parameters ?? []) if (p.in === "path") expect(p.example, `${method} ${path} ${p.name}`).toBeDefined();
        const body = op.requestBody?.content["application/json"];
        if (body) expect(Object.keys(body.examples ?? {}).length, `${method} ${path}`).toBeGreaterThan(0);
      }
    const html = await (await app.fetch(new Request("http://test/docs"))).text();
    for (const piece of ["x-a2a-methods", "request-example", "curl", "x-headers"]) expect(html, piece).toContain(piece);
    expect(html).not.toMatch(/innerHTML|insertAdjacentHTML|outerHTML/);
  });

  it("serves a playground with threads, one card per approval, the A2A card and a link to /docs", async () => {
    app = await makeApp({ APP_ENV: "dev", A2A_NAME: "helper" });
    const res = await app.fetch(new Request("http://test/playground"));
    expect(res.headers.get("content-security-policy")).toContain("connect-src 'self'");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    for (const piece of ['"/approvals/"', '"Approve"', '"Reject"', "awaiting_approval", "approval_pending", "resumed after ", "digest: a.digest"])
      expect(html, piece).toContain(piece);
    for (const piece of ['"/threads?limit=50"', '"/messages"', "?thread=", "agent.threadId", 'href="/docs"', "/.well-known/agent-card.json", 'var A2A_NAME = "helper"', "cards[a.approval_id]", "not approved"])
      expect(html, piece).toContain(piece);
    // Nothing from elsewhere: no external script, style, image or font.
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=["']?https?:/i);
    // Server data goes through textContent only.
    expect(html).not.toMatch(/innerHTML|insertAdjacentHTML|outerHTML|document\.write|eval\(/);
  });

  it("keeps a `</script>` in the prefilled key or the agent name from closing the page's script", async () => {
    app = await makeApp({ APP_ENV: "dev" }, { playgroundKey: "k</script><script>alert(1)</script>" });
    const html = await (await app.fetch(new Request("http://test/playground"))).text();
    expect(html.match(/<\/script>/g)).toHaveLength(1);
    expect(html).toContain("k\\u003c/script>");
  });
});
