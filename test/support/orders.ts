/**
 * The gated `orders` API that approval tests share: a policy whose POST waits for a decision, and
 * `create_order`, a tool that POSTs `{ item }` (default "book") and answers the upstream's status
 * and body. Point ORDERS_URL at a recording upstream (./upstream.ts).
 */
import { expect } from "vitest";
import { defineTool } from "../../src/index.js";
import { chat } from "../helpers.js";

/** `relayers`: the rule relays the requester's decision through these agents (decide_with: relayed). */
export function ordersPolicy(options: { approvers?: string; methods?: readonly string[]; timeoutS?: number; relayers?: readonly string[] } = {}): string {
  return `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    allowed_methods: [${(options.methods ?? ["GET", "POST"]).join(", ")}]
    approval:
      required_for: { methods: [POST] }
      approvers: ${options.approvers ?? "[requester]"}
      timeout_s: ${options.timeoutS ?? 600}
${options.relayers ? `      decide_with: relayed\n      relayers: [${options.relayers.join(", ")}]\n` : ""}`;
}

export const createOrder = defineTool({
  name: "create_order",
  description: "creates an order",
  parameters: { type: "object", properties: { item: { type: "string" } } },
  calls: [{ api: "orders", method: "POST", path: "/orders" }],
  run: async (args, ctx) => {
    const res = await ctx.api.request("orders", { method: "POST", path: "/orders", body: { item: args.item ?? "book" } });
    return { status: res.status, body: res.body };
  },
});

/**
 * create_order after `ms` of the tool's own work before it asks the API; `watchStop`: that work
 * ends when the run stops (else the tool goes on to ask, as a tool that ignores ctx.signal would).
 */
export function orderAfter(ms: number, watchStop: boolean) {
  return defineTool({
    name: "create_order",
    description: "creates an order",
    parameters: { type: "object", properties: { item: { type: "string" } } },
    calls: [{ api: "orders", method: "POST", path: "/orders" }],
    run: async (args, ctx) => {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        if (watchStop) ctx.signal.addEventListener("abort", () => (clearTimeout(timer), reject(ctx.signal.reason)), { once: true });
      });
      const res = await ctx.api.request("orders", { method: "POST", path: "/orders", body: { item: args.item ?? "book" } });
      return { status: res.status, body: res.body };
    },
  });
}

/** A chat message that makes the fake model call create_order, which then waits for a decision. */
export const GATED = '/call create_order {"item":"book"}';

/** Sends GATED on `thread` through `app` and checks the run paused: its message.end data. */
export async function pauseOn(app: { fetch(r: Request): Promise<Response> }, thread: string) {
  const { res, events } = await chat(app, { message: GATED, thread_id: thread });
  expect(res.status).toBe(200);
  const end = events.at(-1)!;
  expect(end).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
  return end.data as { approval: Record<string, any>; run_id: string };
}
