// An example TOOLS_MODULE: the tools a deployed service offers, without a fork.
//
//   TOOLS_MODULE=examples/tools/tickets.mjs API_POLICY_PATH=examples/tools/api-policy.yaml \
//   TICKETS_API_URL=https://tickets.example.com/api TICKETS_API_TOKEN=... npm start
//
// The default export (or an export named `tools`) is an array of defineTool tools; they replace
// the default agent's tools. Every call goes through the policy client (ctx.api.request): the
// policy in api-policy.yaml beside this file lets the agent read tickets freely and holds every
// new ticket for a person's approval; approving sends exactly the recorded call, once.
import { defineTool } from "agent-service";

const listTickets = defineTool({
  name: "list_tickets",
  description: "Lists open support tickets, newest first.",
  parameters: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 50 } } },
  calls: [{ api: "tickets", method: "GET", operation_id: "listTickets", path: "/tickets" }],
  run: async ({ limit }, ctx) => {
    const res = await ctx.api.request("tickets", { method: "GET", path: "/tickets", operationId: "listTickets", query: { status: "open", limit: String(limit ?? 10) } });
    return res.body;
  },
});

const createTicket = defineTool({
  name: "create_ticket",
  description: "Opens a support ticket. A person approves it before it is sent.",
  parameters: {
    type: "object",
    properties: { title: { type: "string", minLength: 1, maxLength: 200 }, body: { type: "string", maxLength: 5000 }, reporter_email: { type: "string" } },
    required: ["title"],
  },
  calls: [{ api: "tickets", method: "POST", operation_id: "createTicket", path: "/tickets" }],
  // Masked wherever the call is shown (the approval, its digest); sent as given once approved.
  redact: ["reporter_email"],
  run: async ({ title, body, reporter_email }, ctx) => {
    const res = await ctx.api.request("tickets", {
      method: "POST",
      path: "/tickets",
      operationId: "createTicket",
      body: { title, body: body ?? "", ...(reporter_email ? { reporter_email } : {}) },
    });
    return { status: res.status, ticket: res.body };
  },
});

export default [listTickets, createTicket];
