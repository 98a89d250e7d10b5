/**
 * OpenAPI 3.1 document of every route, generated from the zod schemas that validate requests
 * (zod's own JSON Schema output), so the docs cannot drift from the validation. Each operation
 * has a request example (parameter `example`s, request body `examples`): /docs builds a curl
 * command from them, and a test sends them.
 */
import { z } from "zod";
import type { Settings } from "../settings/parse.js";
import { a2aPaths } from "./openapi-a2a.js";
import { chatRequestSchema, decisionSchema, listApprovalsQuery, listThreadsQuery, message, messagesQuery, threadId, threadRow } from "./schemas.js";

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" });

const errorBody = { type: "object", properties: { detail: {} }, required: ["detail"] };
const responses = (extra: Record<string, string>) =>
  Object.fromEntries(
    Object.entries({ "401": "Missing or invalid credential.", "403": "Not permitted.", "422": "A field breaks a rule (the body names the field and rule, never the value).", "503": "Authentication or storage unavailable.", ...extra }).map(([code, description]) => [
      code,
      { description, content: { "application/json": { schema: errorBody } } },
    ]),
  );

/** Approval refusals name a `code` (spec 7.1); several codes can share one status. A plain refusal of the same status (unknown or foreign thread) has `detail` alone. */
const codedError = (codes: readonly string[], extra: Record<string, unknown> = {}) => ({
  type: "object",
  properties: { code: { type: "string", enum: codes }, detail: { type: "string" }, ...extra },
  required: ["detail"],
});
const coded = (description: string, codes: readonly string[], extra: Record<string, unknown> = {}) => ({
  description,
  content: { "application/json": { schema: codedError(codes, extra) } },
});

/** The approval object of spec 2.3 as readers see it (query and body null when hidden or dropped). */
const approvalObject = {
  title: "Approval",
  type: "object",
  properties: {
    approval_id: { type: "string" },
    thread_id: { type: "string" },
    run_id: { type: "string" },
    status: { type: "string", enum: ["pending", "approved", "rejected", "expired"] },
    api: { type: "string" },
    method: { type: "string" },
    path: { type: "string", description: "The call's path with ids filled in." },
    operation_id: { type: ["string", "null"] },
    rpc_method: { type: ["string", "null"] },
    a2a_operation: { enum: ["approve", "reject", null] },
    query: { type: ["object", "null"], additionalProperties: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] }, description: "Masked fields masked; null when hidden or dropped once decided." },
    body: { description: "The call's JSON body, masked fields masked; null when hidden or dropped once decided." },
    tool: { type: "string" },
    reason: { type: "string", description: "The tool name followed by the model's text (unverified)." },
    approvers: { type: "array", items: { type: "string" }, description: "`requester` and/or `role:<name>`." },
    requester: { type: "string", description: "Hashed principal id." },
    requester_actor: { type: ["string", "null"] },
    decide_with: { type: "string", enum: ["direct", "relayed"] },
    relayers: { type: "array", items: { type: "string" } },
    decided_by: { type: ["string", "null"], description: "Hashed principal id." },
    decided_via: { type: ["string", "null"] },
    digest: { type: "string", description: "sha256:<hex> of the call as shown." },
    nested: {},
    effect: {},
    created_at: { type: "string" },
    expires_at: { type: "string" },
    decided_at: { type: ["string", "null"] },
    comment: { type: ["string", "null"] },
  },
  required: ["approval_id", "thread_id", "run_id", "status", "api", "method", "path", "tool", "reason", "approvers", "digest", "created_at", "expires_at"],
};
const approvalList = { type: "array", items: approvalObject };

const DIGEST_EXAMPLE = `sha256:${"0".repeat(64)}`;
const bodyExamples = (examples: Record<string, unknown>) => Object.fromEntries(Object.entries(examples).map(([name, value]) => [name, { summary: name, value }]));

export function openApiDocument(settings: Settings): Record<string, unknown> {
  const threadParam = { name: "thread_id", in: "path", required: true, schema: json(threadId()), example: "demo-1" };
  const query = json(listThreadsQuery) as { properties: Record<string, unknown> };
  const messagePaging = json(messagesQuery) as { properties: Record<string, unknown> };
  const approvalsQuery = json(listApprovalsQuery) as { properties: Record<string, unknown> };
  const approvalParam = { name: "approval_id", in: "path", required: true, schema: { type: "string" }, example: "APPROVAL_ID" };
  return {
    openapi: "3.1.0",
    info: { title: "Agent service", version: settings.AGENT_VERSION, description: "One conversational agent behind an HTTP API. Chat streams server-sent events." },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    security: [{ bearer: [] }],
    paths: {
      "/chat": {
        post: {
          summary: "Run the agent on one message; the answer streams as server-sent events.",
          "x-auth-action": "chat.send",
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: json(chatRequestSchema(settings)),
                examples: bodyExamples({ "a new thread": { message: "Hello!" }, "an existing thread": { message: "And now?", thread_id: "demo-1", metadata: { source: "docs" } } }),
              },
            },
          },
          responses: {
            "200": { description: "Events message.start, message.delta, tool.call, tool.result, message.end or error.", content: { "text/event-stream": { schema: { type: "string" } } } },
            ...responses({ "413": "Body over MAX_REQUEST_BYTES." }),
            "409": coded("thread_busy: a run is in progress on the thread; approval_pending: the thread waits for a decision (`approvals` lists the waiting calls).", ["thread_busy", "approval_pending"], {
              approvals: approvalList,
            }),
          },
        },
      },
      "/threads": {
        get: {
          summary: "The caller's threads, most recent first.",
          "x-auth-action": "thread.list",
          parameters: Object.entries(query.properties).map(([name, schema]) => ({ name, in: "query", required: false, schema })),
          responses: { "200": { description: "Thread rows.", content: { "application/json": { schema: { type: "array", items: json(threadRow) } } } }, ...responses({}) },
        },
      },
      "/threads/{thread_id}/messages": {
        get: {
          summary: "The thread's messages in order: a thread of up to 1000 whole, else a page (the newest, or those before or after a message).",
          "x-auth-action": "thread.read",
          parameters: [threadParam, ...Object.entries(messagePaging.properties).map(([name, schema]) => ({ name, in: "query", required: false, schema }))],
          responses: {
            "200": {
              description: "Messages, oldest first. When more lie beyond the page, the Link header names the pages: rel=\"prev\" (older), rel=\"next\" (newer).",
              headers: { Link: { schema: { type: "string" }, example: '</threads/demo-1/messages?before=MESSAGE_ID&limit=1000>; rel="prev"' } },
              content: { "application/json": { schema: { type: "array", items: json(message) } } },
            },
            ...responses({ "404": "Unknown thread.", "422": "A bad limit, before and after together, or a message id that is not in this thread." }),
          },
        },
      },
      "/threads/{thread_id}": {
        delete: {
          summary: "Delete the thread and everything attached.",
          "x-auth-action": "thread.delete",
          parameters: [threadParam],
          responses: { "204": { description: "Deleted." }, ...responses({ "404": "Unknown thread.", "409": "thread_busy: a run is in progress." }) },
        },
      },
      "/threads/{thread_id}/approvals": {
        get: {
          summary: "The thread's approvals, newest first: all for the owner and read-across roles, the ones a decider may decide otherwise.",
          "x-auth-action": "approval.read",
          parameters: [threadParam],
          responses: { "200": { description: "Approvals.", content: { "application/json": { schema: approvalList } } }, ...responses({ "404": "Unknown thread." }) },
        },
      },
      "/approvals": {
        get: {
          summary: "Approvals across threads the caller may see, newest first: its own, those naming one of its roles, all for read-across roles.",
          "x-auth-action": "approval.read",
          parameters: Object.entries(approvalsQuery.properties).map(([name, schema]) => ({ name, in: "query", required: false, schema, ...(name === "status" ? { example: "pending" } : {}) })),
          responses: { "200": { description: "Approvals; each carries its thread_id.", content: { "application/json": { schema: approvalList } } }, ...responses({}) },
        },
      },
      "/threads/{thread_id}/approvals/{approval_id}": {
        post: {
          summary: "Decide a waiting call. After the run's last decision the resumed run streams as server-sent events.",
          "x-auth-action": "approval.decide",
          parameters: [threadParam, approvalParam],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: json(decisionSchema),
                examples: bodyExamples({ approve: { decision: "approve", comment: "ok", digest: DIGEST_EXAMPLE }, reject: { decision: "reject", comment: "not this one" } }),
              },
            },
          },
          responses: {
            "200": {
              description:
                "The resumed run: events as on /chat, its message.start adding approval_id and decision. Or JSON `{approval, pending, resumed: false}` when other approvals of the run still wait (or the run was not resumed here).",
              content: {
                "text/event-stream": { schema: { type: "string" } },
                "application/json": {
                  schema: { type: "object", properties: { approval: approvalObject, pending: approvalList, resumed: { const: false } }, required: ["approval", "pending", "resumed"] },
                },
              },
            },
            ...responses({}),
            "403": coded("not_an_approver: the caller may not decide this call; approval_direct_only: decided by the person, not through an agent. Without a code: not permitted, or the thread belongs to another principal.", ["not_an_approver", "approval_direct_only"]),
            "404": coded("approval_not_found: no such approval on this thread. Without a code: unknown thread.", ["approval_not_found"]),
            "409": coded("approval_not_pending: decided already (`status` names it); approval_digest_mismatch: the decision named no or another digest.", ["approval_not_pending", "approval_digest_mismatch"], {
              status: { type: "string", enum: ["approved", "rejected", "expired"] },
            }),
            "410": coded("approval_expired: the approval expired (counts as rejected); the call was not sent.", ["approval_expired"]),
            "413": { description: "Body over MAX_REQUEST_BYTES.", content: { "application/json": { schema: errorBody } } },
          },
        },
      },
      "/health": { get: { summary: "Liveness.", security: [], responses: { "200": { description: "`{status: 'ok', runtime, checkpointer}`: `checkpointer` is CHECKPOINTER, `durable-object` on workerd's Durable Objects, or `graph-server` under that runtime, which adds `run_store` (`sql` or `memory`: where run records, approvals and tasks live)" } } } },
      "/ready": { get: { summary: "Readiness: the store answers within 2 s.", security: [], responses: { "200": { description: "`{status: 'ready'}`" }, "503": { description: "`{status: 'not_ready'}`" } } } },
      "/metrics": { get: { summary: "Prometheus metrics (bearer METRICS_TOKEN when set).", security: [], responses: { "200": { description: "Text exposition 0.0.4." }, "401": { description: "METRICS_TOKEN set and not presented." }, "404": { description: "METRICS_ENABLED is false." } } } },
      ...a2aPaths(settings),
      "/playground": { get: { summary: "Dev chat page (APP_ENV=dev only).", security: [], responses: { "200": { description: "HTML." } } } },
      "/docs": { get: { summary: "These docs (APP_ENV=dev only).", security: [], responses: { "200": { description: "HTML." } } } },
      "/openapi.json": { get: { summary: "This document (APP_ENV=dev only).", security: [], responses: { "200": { description: "OpenAPI 3.1." } } } },
    },
  };
}
