/**
 * The README's walk through tools from OpenAPI ("A worked example"), as written: the stand-in
 * orders API (examples/orders-api/server.mjs) and the built Node entry with the example policy
 * (policy/orders-openapi.yaml, which names policy/openapi/orders.yaml), TOOLS_FROM_OPENAPI=true
 * and the development defaults of `npm run dev`, both processes on loopback. The same messages as
 * the README's curl commands: read an order, place one (it waits), approve it (sent once), and a
 * call to the denied deleteOrder answered as an unknown tool. What the orders API prints is what
 * the README says it prints.
 */
import { describe, expect, it } from "vitest";
import { parseSse, waitFor } from "../helpers.js";
import { freePort, HOST, killSpawnedAfterEach, spawnEntry, startEntry, stopEntry } from "../support/service-process.js";

killSpawnedAfterEach();

const KEY = "orders-demo-key";
const THREAD = "orders-demo";

describe("README: tools from an OpenAPI document, the worked example", () => {
  it("reads an order, holds a new one for approval, sends it once approved; deleteOrder is no tool", async () => {
    // `node examples/orders-api/server.mjs &`, on a free port
    const port = await freePort();
    const orders = spawnEntry([process.execPath, "examples/orders-api/server.mjs"], { PORT: String(port) });
    await waitFor(() => orders.stdout().includes(`orders API on http://${HOST}:${port}`), 10_000);
    const printed = () => orders.stdout().split("\n").slice(1).filter((l) => l !== "");

    // `API_KEY=... API_POLICY_PATH=policy/orders-openapi.yaml ORDERS_API_URL=... TOOLS_FROM_OPENAPI=true npm run dev`
    const svc = await startEntry("node", {
      APP_ENV: "dev",
      MODEL_PROVIDER: "fake",
      MODEL_NAME: "fake",
      API_KEY: KEY,
      API_POLICY_PATH: "policy/orders-openapi.yaml",
      ORDERS_API_URL: `http://${HOST}:${port}`,
      TOOLS_FROM_OPENAPI: "true",
    });
    const send = (method: string, path: string, body?: unknown) =>
      fetch(`${svc.base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${KEY}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    const chat = async (message: string) => parseSse(await (await send("POST", "/chat", { thread_id: THREAD, message })).text());
    try {
      // Ask for an order: the call, its result ({status, body}) and the answer.
      const read = await chat('/call orders_get_order {"order_id": "A-1001", "expand": "items"}');
      expect(read.find((e) => e.event === "tool.call")?.data).toMatchObject({ name: "orders_get_order", args: { order_id: "A-1001", expand: "items" } });
      const readResult = read.find((e) => e.event === "tool.result")!.data;
      expect(readResult).toMatchObject({ name: "orders_get_order", is_error: false });
      expect(JSON.parse(readResult.result as string)).toMatchObject({ status: 200, body: { id: "A-1001", items: [{ sku: "BK-1" }] } });
      expect(read.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      expect(read.filter((e) => e.event === "message.delta").map((e) => e.data.text).join("")).toMatch(/^done: /);
      expect(printed()).toEqual(["GET /orders/A-1001?expand=items"]);

      // Place one: the run pauses before anything is sent, showing the call as the approver sees it.
      const placed = await chat('/call orders_create_order {"body": {"item": "lamp", "quantity": 2}}');
      const end = placed.at(-1)!;
      expect(end).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
      expect(end.data.approval).toMatchObject({ method: "POST", path: "/orders", operation_id: "createOrder", body: { item: "lamp", quantity: 2 } });
      expect(printed()).toHaveLength(1);

      // Its approval_id from the thread's approvals, then approve it.
      const listed = (await (await send("GET", `/threads/${THREAD}/approvals`)).json()) as unknown;
      const approvalId = (end.data.approval as { approval_id: string }).approval_id;
      expect(JSON.stringify(listed)).toContain(approvalId);
      const decided = await send("POST", `/threads/${THREAD}/approvals/${approvalId}`, { decision: "approve" });
      expect(decided.status).toBe(200);
      const resumed = parseSse(await decided.text());
      const sent = resumed.find((e) => e.event === "tool.result")!.data;
      expect(sent).toMatchObject({ name: "orders_create_order", is_error: false });
      expect(JSON.parse(sent.result as string)).toMatchObject({ status: 201, body: { id: "A-1003", item: "lamp", quantity: 2 } });
      expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      expect(printed()).toEqual(["GET /orders/A-1001?expand=items", 'POST /orders {"item":"lamp","quantity":2}']);

      // deleteOrder is denied by the policy: the model was never offered it.
      const deleted = await chat('/call orders_delete_order {"order_id": "A-1001"}');
      const refused = deleted.find((e) => e.event === "tool.result")!.data;
      expect(refused).toMatchObject({ name: "orders_delete_order", is_error: true });
      expect(refused.result).toBe(`There is no tool named "orders_delete_order".`);
      expect(printed()).toHaveLength(2);
    } finally {
      expect(await stopEntry(svc)).toBe(0);
      orders.child.kill("SIGTERM");
      await orders.exited;
    }
  }, 40_000);
});
