/** GET /approvals for a delegated caller (spec 4.3): only what its agent asked for, in full pages. */
import { afterEach, describe, expect, it } from "vitest";
import { makeApp, parseSse, type TestApp } from "../helpers.js";
import { createOrder, GATED, ordersPolicy } from "../support/orders.js";
import { actor, bearerWordPolicy } from "./support/principals.js";

// One user, u1: calling directly ("user"), or through agent-a ("agent").
const authPolicy = bearerWordPolicy({ user: { id: "u1" }, agent: { id: "u1", actor: actor("agent-a") } });
const as = (who: string, path: string, body?: unknown) =>
  new Request(`http://test${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${who}`, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

let app: TestApp;
afterEach(async () => app?.close());

describe("GET /approvals for a delegated caller", () => {
  it("pages through the approvals its agent asked for, each page full, none of the user's own", async () => {
    app = await makeApp({ AUTH_ALLOWED_ACTORS: "agent-a", ORDERS_URL: "http://127.0.0.1:9/" }, { authPolicy, tools: [createOrder], policyText: ordersPolicy() });
    const mine: string[] = [];
    for (let i = 0; i < 3; i++) {
      for (const who of ["user", "agent"]) {
        const events = parseSse(await (await app.fetch(as(who, "/chat", { message: GATED, thread_id: `${who}-${i}` }))).text());
        const id = (events.at(-1)!.data.approval as { approval_id: string }).approval_id;
        if (who === "agent") mine.unshift(id);
      }
    }
    const page = async (offset: number) =>
      ((await (await app.fetch(as("agent", `/approvals?limit=2&offset=${offset}`))).json()) as { approval_id: string; requester_actor: string }[]);
    const first = await page(0);
    const second = await page(2);
    // (creation times may tie within a millisecond: the order is the store's, the pages are what counts)
    expect(first).toHaveLength(2);
    expect(second).toHaveLength(1);
    expect([...first, ...second].map((a) => a.approval_id).sort()).toEqual([...mine].sort());
    expect([...first, ...second].every((a) => a.requester_actor === "agent-a")).toBe(true);
  });
});
