/**
 * Tools from OpenAPI (TOOLS_FROM_OPENAPI) end to end, against a loopback orders API that records
 * what it receives: reads with path and query parameters, a gated write approved and sent once
 * with its body, a denied operation offered as no tool, a 3.0 (JSON) and a 3.1 (YAML) document,
 * the tools a real provider client is offered (a loopback OpenAI-compatible model server records
 * them), name clashes and the warnings for what cannot be offered.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_TOOLS } from "../../src/agent/default-agent.js";
import { defineTool } from "../../src/index.js";
import { chat, makeApp, post, parseSse, type TestApp } from "../helpers.js";
import { loopbackUpstream, sse } from "../providers/support.js";
import { NEW_ORDER_OFFERED, ORDERS_30, ORDERS_31, ORDERS_OPENAPI_POLICY, openApiFiles } from "../support/orders-openapi.js";
import { recordingUpstream } from "../support/upstream.js";

const orders = recordingUpstream();
const { hits } = orders;
const model = loopbackUpstream({ basePath: "/v1" });

const DOCS = { "3.0 (JSON)": { file: "openapi/orders.json", text: ORDERS_30 }, "3.1 (YAML)": { file: "openapi/orders.yaml", text: ORDERS_31 } } as const;

let apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps) await a.close();
  apps = [];
  hits.length = 0;
});

async function app(doc: { file: string; text: string }, env: Record<string, string> = {}, options: Parameters<typeof makeApp>[1] = {}) {
  const a = await makeApp(
    { ORDERS_URL: orders.base, TOOLS_FROM_OPENAPI: "true", ...env },
    { policyText: ORDERS_OPENAPI_POLICY(doc.file), readText: openApiFiles({ [doc.file]: doc.text }), ...options },
  );
  apps.push(a);
  return a;
}

const results = (events: { event: string; data: Record<string, any> }[]) => events.filter((e) => e.event === "tool.result").map((e) => e.data);

describe.each(Object.entries(DOCS))("an OpenAPI %s document", (_label, doc) => {
  it("offers a read operation that sends its path and query parameters", async () => {
    const a = await app(doc);
    const { events } = await chat(a, { message: '/call orders_get_order {"order_id":"A 1","expand":"items"}' });
    const [result] = results(events);
    expect(result).toMatchObject({ name: "orders_get_order", is_error: false });
    expect(JSON.parse(result!.result)).toEqual({ status: 200, body: { created: true } });
    expect(hits.map((h) => [h.method, h.url, h.body])).toEqual([["GET", "/orders/A%201?expand=items", ""]]);
  });

  it("sends array query parameters by their style, and none the model left out", async () => {
    const a = await app(doc);
    await chat(a, { message: '/call orders_list_orders {"tag":["a","b"],"fields":["id","item"],"status":null}' });
    expect(hits.map((h) => h.url)).toEqual(["/orders?tag=a&tag=b&fields=id%2Citem"]);
  });

  it("names an operation without operationId from its method and path", async () => {
    const a = await app(doc);
    await chat(a, { message: '/call orders_get_orders_order_id_history {"order_id":"A-1"}' });
    expect(hits.map((h) => [h.method, h.url])).toEqual([["GET", "/orders/A-1/history"]]);
  });

  it("checks the arguments against the offered schema before anything is sent", async () => {
    const a = await app(doc);
    const { events } = await chat(a, { message: '/call orders_create_order {"body":{"item":"book","quantity":0}}' });
    const [result] = results(events);
    expect(result).toMatchObject({ is_error: true });
    expect(result!.result).toMatch(/quantity/);
    expect(hits).toEqual([]);
  });

  it("holds a gated write for approval and, once approved, sends it once with its body", async () => {
    const a = await app(doc);
    const order = { item: "book", quantity: 2, note: null, address: { city: "Oslo" } };
    const { events } = await chat(a, { message: `/call orders_create_order ${JSON.stringify({ body: order })}`, thread_id: "t-openapi" });
    const end = events.at(-1)!;
    expect(end).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
    expect(end.data.approval).toMatchObject({ api: "orders", method: "POST", path: "/orders", operation_id: "createOrder", body: order });
    expect(hits).toEqual([]);

    const res = await a.fetch(post(`/threads/t-openapi/approvals/${end.data.approval.approval_id}`, { decision: "approve" }));
    expect(res.status).toBe(200);
    const resumed = parseSse(await res.text());
    const [result] = results(resumed);
    expect(result).toMatchObject({ name: "orders_create_order", is_error: false });
    expect(JSON.parse(result!.result)).toEqual({ status: 200, body: { created: true } });
    expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(hits.map((h) => [h.method, h.url, JSON.parse(h.body)])).toEqual([["POST", "/orders", order]]);
    expect(hits[0]!.headers["content-type"]).toBe("application/json");
  });

  it("offers a denied operation as no tool: the model's call is answered as an unknown tool, nothing sent", async () => {
    const a = await app(doc);
    const { events } = await chat(a, { message: '/call orders_delete_order {"order_id":"A-1"}' });
    const [result] = results(events);
    expect(result).toMatchObject({ name: "orders_delete_order", is_error: true });
    expect(hits).toEqual([]);
  });

  it("warns once per operation it cannot offer, naming it, and offers the others", async () => {
    const a = await app(doc);
    const warnings = a.logs.filter((l) => l.level === "WARNING").map((l) => String(l.message));
    const about = (id: string) => warnings.filter((w) => w.includes(`(${id})`));
    expect(about("uploadReceipt")).toHaveLength(1);
    expect(about("uploadReceipt")[0]).toMatch(/not offered as a tool: a file upload \((multipart\/form-data|application\/octet-stream)\)/);
    expect(about("getSignedOrder")).toEqual([expect.stringMatching(/not offered as a tool: it needs the header parameter X-Signature/)]);
    expect(about("subscribe")).toEqual([expect.stringMatching(/offered as a tool without: its callbacks/)]);
    // Nothing about the operations that were offered whole, nor the denied one.
    for (const id of ["listOrders", "getOrder", "createOrder", "deleteOrder"]) expect(about(id)).toEqual([]);
    const made = a.logs.find((l) => l.message === "tools from OpenAPI");
    expect(String(made?.tools).split(",").sort()).toEqual(["orders_create_order", "orders_get_order", "orders_get_orders_order_id_history", "orders_list_orders", "orders_subscribe"]);
  });

  it("offers the model the tools with their $ref'd body schema inlined (a loopback OpenAI-compatible server records them)", async () => {
    model.handler = (_req, res) =>
      sse(res, [
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { role: "assistant", content: "hello" }, finish_reason: null }] })}\n\n`,
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`,
        "data: [DONE]\n\n",
      ]);
    const a = await app(doc, { MODEL_PROVIDER: "openai-compatible", MODEL_NAME: "m", MODEL_API_KEY: "k", OPENAI_BASE_URL: model.baseURL, MODEL_MAX_RETRIES: "0" });
    const { events } = await chat(a, { message: "what can you do?" });
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(model.requests).toHaveLength(1);
    const offered = model.requests[0]!.body.tools as { type: string; function: { name: string; description: string; parameters: Record<string, any> } }[];
    const byName = new Map(offered.map((t) => [t.function.name, t.function]));
    // Beside the default agent's tools (no tools were given to createApp), not instead of them.
    expect([...byName.keys()].filter((n) => !n.startsWith("orders_")).sort()).toEqual(DEFAULT_TOOLS.map((t) => t.name).sort());
    expect([...byName.keys()].filter((n) => n.startsWith("orders_")).sort()).toEqual([
      "orders_create_order",
      "orders_get_order",
      "orders_get_orders_order_id_history",
      "orders_list_orders",
      "orders_subscribe",
    ]);
    const create = byName.get("orders_create_order")!;
    expect(create.description).toBe("Place an order\n\nA person approves it first.");
    expect(create.parameters).toEqual({ type: "object", properties: { body: NEW_ORDER_OFFERED }, required: ["body"], additionalProperties: false });
    expect(byName.get("orders_get_order")!.parameters).toEqual({
      type: "object",
      properties: { order_id: { type: "string", description: "The order's id." }, expand: { type: "string" } },
      required: ["order_id"],
      additionalProperties: false,
    });
    expect(byName.get("orders_list_orders")!.parameters.properties.status).toEqual({ type: ["string", "null"], enum: ["open", "shipped", null] });
    expect(JSON.stringify(offered)).not.toMatch(/\$ref|nullable|discriminator|readOnly|x-internal|"example/);
  });
});

describe("TOOLS_FROM_OPENAPI", () => {
  const doc = DOCS["3.1 (YAML)"];

  it("is off by default: no tool is made from the document", async () => {
    const a = await app(doc, { TOOLS_FROM_OPENAPI: "" });
    expect(a.settings.TOOLS_FROM_OPENAPI).toBe(false);
    const { events } = await chat(a, { message: '/call orders_get_order {"order_id":"A-1"}' });
    expect(results(events)[0]).toMatchObject({ is_error: true });
    expect(hits).toEqual([]);
  });

  it("puts the made tools beside the tools given to createApp", async () => {
    const ping = defineTool({ name: "ping", description: "answers pong", parameters: { type: "object" }, calls: [], run: () => "pong" });
    const a = await app(doc, {}, { tools: [ping] });
    const { events } = await chat(a, { message: '/call ping {}\n/call orders_get_order {"order_id":"A-1"}' });
    expect(results(events).map((r) => [r.name, r.is_error])).toEqual([
      ["ping", false],
      ["orders_get_order", false],
    ]);
  });

  it("stops startup naming both when a made tool has the name of a given one", async () => {
    const clash = defineTool({ name: "orders_get_order", description: "mine", parameters: { type: "object" }, calls: [], run: () => "x" });
    const error = await app(doc, {}, { tools: [clash] }).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error & { code?: string }).code).toBe("configuration");
    expect((error as Error).message).toMatch(/Two tools are named orders_get_order: the OpenAPI operation GET \/orders\/\{order_id\} \(getOrder\) of API orders, and the agent's tool orders_get_order/);
  });

  it("stops startup naming both when two operations make one name", async () => {
    const twin = ORDERS_31.replace("  /orders/{order_id}/history:\n    get:\n", "  /orders/{order_id}/history:\n    get:\n      operationId: get_order\n");
    const error = await app({ file: "twin.yaml", text: twin }).catch((e: unknown) => e as Error);
    expect((error as Error & { code?: string }).code).toBe("invalid_policy");
    expect((error as Error).message).toContain(
      "tools.orders_get_order two tools have this name: the OpenAPI operation GET /orders/{order_id} (getOrder) of API orders and the OpenAPI operation GET /orders/{order_id}/history (get_order) of API orders",
    );
  });

  it("offers no operation without operationId where a denial names an operationId alone (the judge fails closed)", async () => {
    const a = await makeApp(
      { ORDERS_URL: orders.base, TOOLS_FROM_OPENAPI: "true" },
      { policyText: ORDERS_OPENAPI_POLICY(doc.file).replace("{operationId: deleteOrder, methods: [DELETE]}", "{operationId: deleteOrder}"), readText: openApiFiles({ [doc.file]: doc.text }) },
    );
    apps.push(a);
    const made = String(a.logs.find((l) => l.message === "tools from OpenAPI")?.tools).split(",");
    expect(made).toContain("orders_get_order");
    expect(made).not.toContain("orders_get_orders_order_id_history");
  });

  it("warns when no tool can be made: no openapi file, or a Swagger 2.0 one", async () => {
    const none = await makeApp({ ORDERS_URL: orders.base, TOOLS_FROM_OPENAPI: "true" }, { policyText: ORDERS_OPENAPI_POLICY(doc.file).replace(/ {4}openapi: .*\n/, "") });
    apps.push(none);
    expect(none.logs.filter((l) => l.level === "WARNING").map((l) => l.message)).toContain("TOOLS_FROM_OPENAPI is on, but no API of the policy names an openapi file: no tools are made");
    const swagger = await app({ file: "swagger.json", text: JSON.stringify({ swagger: "2.0", paths: { "/orders": { get: { operationId: "listOrders" } } } }) });
    expect(swagger.logs.filter((l) => l.level === "WARNING").map((l) => l.message)).toContain(
      "no tools are made from the OpenAPI file of API orders: Swagger 2.0 is not supported (OpenAPI 3.0 and 3.1 are)",
    );
  });

  it("offers no operation whose method allowed_methods leaves out", async () => {
    const a = await makeApp(
      { ORDERS_URL: orders.base, TOOLS_FROM_OPENAPI: "true" },
      { policyText: ORDERS_OPENAPI_POLICY(doc.file).replace("allowed_methods: [GET, POST, DELETE]", "allowed_methods: [GET]"), readText: openApiFiles({ [doc.file]: doc.text }) },
    );
    apps.push(a);
    const made = String(a.logs.find((l) => l.message === "tools from OpenAPI")?.tools).split(",").sort();
    expect(made).toEqual(["orders_get_order", "orders_get_orders_order_id_history", "orders_list_orders"]);
  });

  it("offers only what the allow-list matches", async () => {
    const a = await makeApp(
      { ORDERS_URL: orders.base, TOOLS_FROM_OPENAPI: "true" },
      {
        policyText: ORDERS_OPENAPI_POLICY(doc.file).replace("    denied_operations:", "    allowed_operations:\n      - {operationId: getOrder}\n    denied_operations:"),
        readText: openApiFiles({ [doc.file]: doc.text }),
      },
    );
    apps.push(a);
    expect(a.logs.find((l) => l.message === "tools from OpenAPI")).toMatchObject({ tools: "orders_get_order", count: 1 });
  });
});
