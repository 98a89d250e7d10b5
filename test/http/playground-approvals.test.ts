import { afterEach, describe, expect, it } from "vitest";
import { makeApp, type TestApp } from "../helpers.js";

let app: TestApp;
afterEach(async () => app?.close());

type Operation = {
  "x-auth-action"?: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: { properties: Record<string, { enum?: string[] }>; required: string[] } }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
};

describe("approvals in the dev docs and playground", () => {
  it("describes the three approval routes with the decision body from the validating schema", async () => {
    app = await makeApp({ APP_ENV: "dev" });
    const doc = (await (await app.fetch(new Request("http://test/openapi.json"))).json()) as { paths: Record<string, Record<string, Operation>> };

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

  it("serves a playground that renders approval cards and posts decisions", async () => {
    app = await makeApp({ APP_ENV: "dev" });
    const html = await (await app.fetch(new Request("http://test/playground"))).text();
    for (const piece of ['"/approvals/"', '"Approve"', '"Reject"', "awaiting_approval", "approval_pending", "resumed after ", "digest: a.digest"])
      expect(html, piece).toContain(piece);
    // Server data goes through textContent only.
    expect(html).not.toMatch(/innerHTML|insertAdjacentHTML|outerHTML/);
  });
});
