/**
 * The A2A routes in the OpenAPI document (spec 4.5): the card GET and the JSON-RPC POST, with one
 * request example per method. JSON-RPC puts every method behind one path, so the methods are
 * listed in `x-a2a-methods` (1.0 name, 0.3 name, streaming) and each has a request body example;
 * an example names the headers it needs in `x-headers` (A2A-Version picks the wire version).
 */
import type { JsonValue } from "../json.js";
import { A2A_V03_TO_V10 } from "../policy/document.js";
import type { Settings } from "../settings/parse.js";

/** The methods this service answers (a2a/dispatch.ts), in the order the docs list them. */
const METHODS = [
  { method: "SendMessage", streaming: false, summary: "Send a message; the answer waits for the task's outcome (or, with returnImmediately, the task as it starts)." },
  { method: "SendStreamingMessage", streaming: true, summary: "Send a message; the task's updates stream as server-sent events, the reply's last chunk marked lastChunk." },
  { method: "GetTask", streaming: false, summary: "The task as it stands (owner only; -32001 for an unknown or foreign task)." },
  { method: "ListTasks", streaming: false, summary: "The caller's tasks, newest first, optionally of one context; paged by pageSize and pageToken." },
  { method: "CancelTask", streaming: false, summary: "Cancel a task that has not ended (-32002 when it runs on another replica or has ended)." },
  { method: "SubscribeToTask", streaming: true, summary: "Follow a running task's updates (-32004 when it runs on another replica or has ended)." },
] as const;

const V03_NAME: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(A2A_V03_TO_V10).map(([v03, v10]) => [v10, v03]));

const V10 = { "A2A-Version": "1.0" };
const V10_STREAM = { ...V10, Accept: "text/event-stream" };
const TASK = "TASK_ID";
const text = (words: string) => ({ messageId: "m-1", role: "ROLE_USER", parts: [{ text: words }] });
const rpc = (method: string, params: Record<string, JsonValue>) => ({ jsonrpc: "2.0", id: 1, method, params });

function requestExamples(): Record<string, { summary: string; value: unknown; "x-headers"?: Record<string, string> }> {
  return {
    SendMessage: { summary: "SendMessage (1.0)", "x-headers": V10, value: rpc("SendMessage", { message: text("What can you do?") }) },
    SendStreamingMessage: { summary: "SendStreamingMessage (1.0): answers text/event-stream", "x-headers": V10_STREAM, value: rpc("SendStreamingMessage", { message: text("Summarise my open orders.") }) },
    GetTask: { summary: "GetTask (1.0)", "x-headers": V10, value: rpc("GetTask", { id: TASK, historyLength: 10 }) },
    ListTasks: { summary: "ListTasks (1.0)", "x-headers": V10, value: rpc("ListTasks", { pageSize: 20 }) },
    CancelTask: { summary: "CancelTask (1.0)", "x-headers": V10, value: rpc("CancelTask", { id: TASK }) },
    SubscribeToTask: { summary: "SubscribeToTask (1.0): answers text/event-stream", "x-headers": V10_STREAM, value: rpc("SubscribeToTask", { id: TASK }) },
    decision: {
      summary: "A decision on a task waiting for an approval (SendMessage with a data part, 1.0)",
      "x-headers": V10,
      value: rpc("SendMessage", {
        message: { messageId: "m-2", role: "ROLE_USER", taskId: TASK, parts: [{ data: { approval_id: "APPROVAL_ID", decision: "approve", comment: "ok", digest: `sha256:${"0".repeat(64)}` }, mediaType: "application/json" }] },
      }),
    },
    "message/send": {
      summary: "message/send (A2A 0.3: no A2A-Version header)",
      "x-headers": {},
      value: rpc("message/send", { message: { kind: "message", messageId: "m-3", role: "user", parts: [{ kind: "text", text: "What can you do?" }] } }),
    },
  };
}

const rpcResponse = {
  type: "object",
  description: "A JSON-RPC 2.0 response: `result` (the method's answer) or `error` {code, message, data}.",
  properties: { jsonrpc: { const: "2.0" }, id: {}, result: {}, error: { type: "object", properties: { code: { type: "integer" }, message: { type: "string" }, data: {} }, required: ["code", "message"] } },
  required: ["jsonrpc", "id"],
};
const errorBody = { type: "object", properties: { detail: {} }, required: ["detail"] };
const plain = (description: string) => ({ description, content: { "application/json": { schema: errorBody } } });

export function a2aPaths(settings: Settings): Record<string, unknown> {
  const agent = { name: "agent", in: "path", required: true, schema: { type: "string", enum: [settings.A2A_NAME] }, example: settings.A2A_NAME, description: "This agent's name (A2A_NAME)." };
  const version = {
    name: "A2A-Version",
    in: "header",
    required: false,
    schema: { type: "string" },
    example: "1.0",
    description: "1.0 for the 1.0 method names; absent, empty or 0.3 for A2A 0.3 (message/send, ...) on the same URL; anything else is JSON-RPC error -32009.",
  };
  return {
    "/a2a/{agent}/.well-known/agent-card.json": {
      get: {
        summary: "The A2A agent card: the JSON-RPC URL (1.0 and 0.3), streaming, the chat skill, the security scheme and the origin extension.",
        "x-auth-action": "card.read",
        parameters: [agent],
        responses: {
          "200": { description: "The agent card (A2A 1.0 AgentCard, with the 0.3 interface listed too).", content: { "application/json": { schema: { type: "object" } } } },
          "401": plain("Missing or invalid credential."),
          "403": plain("Not permitted."),
          "404": { description: "Another agent name." },
        },
      },
    },
    "/a2a/{agent}": {
      post: {
        summary: "A2A JSON-RPC: one request per POST. The methods are listed below with their A2A 0.3 names; the streaming ones answer server-sent events, each frame one JSON-RPC response.",
        "x-auth-action": "a2a.invoke",
        "x-a2a-methods": METHODS.map((m) => ({ ...m, v03: V03_NAME[m.method] ?? null })),
        parameters: [agent, version],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "object", properties: { jsonrpc: { const: "2.0" }, id: { type: ["string", "integer"] }, method: { type: "string", enum: METHODS.map((m) => m.method) }, params: { type: "object" } }, required: ["jsonrpc", "method"] }, examples: requestExamples() } },
        },
        responses: {
          "200": {
            description: "A JSON-RPC response (errors included: -32001 unknown task, -32602 invalid params, -32009 version not supported), or for a streaming method server-sent events of JSON-RPC responses.",
            content: { "application/json": { schema: rpcResponse }, "text/event-stream": { schema: { type: "string" } } },
          },
          "401": plain("Missing or invalid credential."),
          "403": plain("Not permitted (a delegated caller not allowed, a refused chain)."),
          "404": { description: "Another agent name." },
          "413": plain("Body over MAX_REQUEST_BYTES."),
        },
      },
    },
  };
}
