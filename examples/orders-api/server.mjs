#!/usr/bin/env node
/**
 * A stand-in for the orders API of policy/openapi/orders.yaml, for the README's walk through
 * tools from OpenAPI: in memory, on loopback only (PORT, default 8081). Prints each request it
 * receives, so you can see what the agent's tools sent and when.
 *
 *   node examples/orders-api/server.mjs
 */
import { createServer } from "node:http";

const orders = new Map([
  ["A-1001", { id: "A-1001", item: "book", quantity: 1, status: "shipped", items: [{ sku: "BK-1", title: "A book" }] }],
  ["A-1002", { id: "A-1002", item: "lamp", quantity: 2, status: "open", items: [{ sku: "LM-7", title: "Desk lamp" }] }],
]);
let next = 1003;

function reply(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

const server = createServer((req, res) => {
  let text = "";
  req.on("data", (chunk) => (text += chunk));
  req.on("end", () => {
    console.log(`${req.method} ${req.url}${text ? ` ${text}` : ""}`);
    const url = new URL(req.url ?? "/", "http://orders.local");
    const one = /^\/orders\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && url.pathname === "/orders") {
      const status = url.searchParams.get("status");
      const limit = Number(url.searchParams.get("limit") ?? 50);
      const list = [...orders.values()].reverse().filter((o) => !status || o.status === status);
      return reply(res, 200, list.slice(0, limit).map(({ items, ...o }) => o));
    }
    if (req.method === "POST" && url.pathname === "/orders") {
      let body;
      try {
        body = JSON.parse(text);
      } catch {
        return reply(res, 400, { detail: "the body is not JSON" });
      }
      const id = `A-${next++}`;
      const order = { id, item: body.item, quantity: body.quantity, note: body.note ?? null, status: "open", items: [] };
      orders.set(id, order);
      return reply(res, 201, order);
    }
    if (one && req.method === "GET") {
      const order = orders.get(decodeURIComponent(one[1]));
      if (!order) return reply(res, 404, { detail: "no such order" });
      const { items, ...rest } = order;
      return reply(res, 200, url.searchParams.get("expand") === "items" ? order : rest);
    }
    if (one && req.method === "DELETE") return reply(res, 204);
    reply(res, 404, { detail: "not found" });
  });
});

const port = Number(process.env.PORT ?? 8081);
server.listen(port, "127.0.0.1", () => console.log(`orders API on http://127.0.0.1:${port}`));
