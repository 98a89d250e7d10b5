/**
 * OpenAPI 3.1 document of every route, generated from the zod schemas that validate requests
 * (zod's own JSON Schema output), so the docs cannot drift from the validation.
 */
import { z } from "zod";
import type { Settings } from "../settings/parse.js";
import { chatRequestSchema, listThreadsQuery, message, threadId, threadRow } from "./schemas.js";

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" });

const errorBody = { type: "object", properties: { detail: {} }, required: ["detail"] };
const responses = (extra: Record<string, string>) =>
  Object.fromEntries(
    Object.entries({ "401": "Missing or invalid credential.", "403": "Not permitted.", "422": "A field breaks a rule (the body names the field and rule, never the value).", "503": "Authentication or storage unavailable.", ...extra }).map(([code, description]) => [
      code,
      { description, content: { "application/json": { schema: errorBody } } },
    ]),
  );

export function openApiDocument(settings: Settings): Record<string, unknown> {
  const threadParam = { name: "thread_id", in: "path", required: true, schema: json(threadId()) };
  const query = json(listThreadsQuery) as { properties: Record<string, unknown> };
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
          requestBody: { required: true, content: { "application/json": { schema: json(chatRequestSchema(settings)) } } },
          responses: {
            "200": { description: "Events message.start, message.delta, tool.call, tool.result, message.end or error.", content: { "text/event-stream": { schema: { type: "string" } } } },
            ...responses({ "409": "thread_busy: a run is in progress on the thread.", "413": "Body over MAX_REQUEST_BYTES." }),
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
          summary: "The thread's messages in order.",
          "x-auth-action": "thread.read",
          parameters: [threadParam],
          responses: { "200": { description: "Messages.", content: { "application/json": { schema: { type: "array", items: json(message) } } } }, ...responses({ "404": "Unknown thread." }) },
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
      "/health": { get: { summary: "Liveness.", security: [], responses: { "200": { description: "`{status: 'ok', runtime, checkpointer}`" } } } },
      "/ready": { get: { summary: "Readiness: the store answers within 2 s.", security: [], responses: { "200": { description: "`{status: 'ready'}`" }, "503": { description: "`{status: 'not_ready'}`" } } } },
      "/metrics": { get: { summary: "Prometheus metrics (bearer METRICS_TOKEN when set).", security: [], responses: { "200": { description: "Text exposition 0.0.4." }, "401": { description: "METRICS_TOKEN set and not presented." }, "404": { description: "METRICS_ENABLED is false." } } } },
      "/playground": { get: { summary: "Dev chat page (APP_ENV=dev only).", security: [], responses: { "200": { description: "HTML." } } } },
      "/docs": { get: { summary: "These docs (APP_ENV=dev only).", security: [], responses: { "200": { description: "HTML." } } } },
      "/openapi.json": { get: { summary: "This document (APP_ENV=dev only).", security: [], responses: { "200": { description: "OpenAPI 3.1." } } } },
    },
  };
}
