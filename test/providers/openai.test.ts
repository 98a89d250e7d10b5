/**
 * The OpenAI provider through the real `openai` SDK against a loopback server that speaks the
 * streaming protocols (chat completions SSE with `[DONE]`; typed responses-API events). The
 * provider contract (contract.ts) runs for openai and openai-compatible in both modes; the tests
 * here are the ones only this provider has.
 */
import { describe, expect, it } from "vitest";
import { hasCode } from "../../src/errors.js";
import { MAX_BACKOFF_MS } from "../../src/agent/providers/attempt.js";
import { createOpenAIModel, type OpenAIModelOptions } from "../../src/agent/providers/openai.js";
import { describeProviderContract } from "./contract.js";
import { collect, conversation, failure, loopbackUpstream, request, sse } from "./support.js";

const API_KEY = "sk-loopback-test-key";

const upstream = loopbackUpstream({ basePath: "/v1" });
const { requests } = upstream;

function model(overrides: Partial<OpenAIModelOptions> = {}) {
  return createOpenAIModel({
    provider: "openai",
    model: "gpt-test",
    apiKey: API_KEY,
    baseURL: upstream.baseURL,
    maxRetries: 0,
    fetch: upstream.fetch,
    ...overrides,
  });
}

// --- chat completions wire format -----------------------------------------------------------

const chunk = (delta: object | null, usage?: object) =>
  `data: ${JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt-test",
    choices: delta ? [{ index: 0, delta, finish_reason: null }] : [],
    ...(usage ? { usage } : {}),
  })}\n\n`;

const chatText = (deltas: string[]) => [
  chunk({ role: "assistant", content: "" }),
  ...deltas.map((content) => chunk({ content })),
  chunk(null, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }),
  "data: [DONE]\n\n",
];

const chatToolCalls = () => [
  chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
  chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "get_time", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '{"zone":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '"UTC"}' } }] }),
  chunk(null, { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 }),
  "data: [DONE]\n\n",
];

// --- responses API wire format --------------------------------------------------------------

let seq = 0;
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
const completed = (input_tokens: number, output_tokens: number) =>
  ev("response.completed", {
    response: { id: "resp_1", object: "response", status: "completed", output: [], usage: { input_tokens, output_tokens, total_tokens: input_tokens + output_tokens } },
  });

const responsesText = (deltas: string[]) => [
  ev("response.created", { response: { id: "resp_1", object: "response", status: "in_progress", output: [] } }),
  ev("response.output_item.added", { output_index: 0, item: { type: "message", id: "msg_1", role: "assistant", status: "in_progress", content: [] } }),
  ...deltas.map((delta) => ev("response.output_text.delta", { item_id: "msg_1", output_index: 0, content_index: 0, delta })),
  ev("response.output_text.done", { item_id: "msg_1", output_index: 0, content_index: 0, text: deltas.join("") }),
  completed(11, 7),
];

const fnItem = (id: string, call_id: string, name: string, args: string) => ({ type: "function_call", id, call_id, name, arguments: args, status: "completed" });
const responsesToolCalls = () => [
  ev("response.created", { response: { id: "resp_1", object: "response", status: "in_progress", output: [] } }),
  ev("response.output_item.added", { output_index: 0, item: { ...fnItem("fc_1", "call_a", "get_weather", ""), status: "in_progress" } }),
  ev("response.function_call_arguments.delta", { item_id: "fc_1", output_index: 0, delta: '{"ci' }),
  ev("response.function_call_arguments.delta", { item_id: "fc_1", output_index: 0, delta: 'ty":"Oslo"}' }),
  ev("response.output_item.done", { output_index: 0, item: fnItem("fc_1", "call_a", "get_weather", '{"city":"Oslo"}') }),
  ev("response.output_item.added", { output_index: 1, item: { ...fnItem("fc_2", "call_b", "get_time", ""), status: "in_progress" } }),
  ev("response.function_call_arguments.delta", { item_id: "fc_2", output_index: 1, delta: '{"zone":' }),
  ev("response.function_call_arguments.delta", { item_id: "fc_2", output_index: 1, delta: '"UTC"}' }),
  ev("response.output_item.done", { output_index: 1, item: fnItem("fc_2", "call_b", "get_time", '{"zone":"UTC"}') }),
  completed(20, 9),
];

// --- shared conversation ----------------------------------------------------------------------

const { user, assistantCalls, results } = conversation(["call_a", "call_b"], "");

const modes = [
  {
    mode: "chat completions",
    path: "/v1/chat/completions",
    useResponsesApi: false,
    text: chatText,
    textStart: () => chatText(["first"]).slice(0, 2),
    toolCalls: chatToolCalls,
    errorInStream: () => [chunk({ role: "assistant", content: "" }), `data: ${JSON.stringify({ error: { message: "secret-body-text", type: "server_error" } })}\n\n`],
    errorInStreamKind: "error in stream",
    malformed: () => ["data: {not json\n\n"],
    sentSystem: (body: any) => body.messages.find((m: { role: string }) => m.role === "system")?.content,
    // System first; tool results as tool messages by tool_call_id (the error flag has no place here).
    sentMessages: (body: any) => body.messages,
    sentHistory: [
      { role: "system", content: "You are a test agent." },
      { role: "user", content: "Weather in Oslo and the time?" },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
          { id: "call_b", type: "function", function: { name: "get_time", arguments: '{"zone":"UTC"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "sunny" },
      { role: "tool", tool_call_id: "call_b", content: "boom" },
      { role: "user", content: "And tomorrow?" },
      { role: "assistant", content: "" },
      { role: "assistant", content: "No idea." },
      { role: "user", content: "Thanks." },
    ],
  },
  {
    mode: "responses API",
    path: "/v1/responses",
    useResponsesApi: true,
    text: responsesText,
    textStart: () => responsesText(["first"]).slice(0, 3),
    toolCalls: responsesToolCalls,
    errorInStream: () => [responsesText([])[0]!, ev("error", { code: "server_error", message: "secret-body-text", param: null })],
    errorInStreamKind: "error event",
    malformed: () => ["event: response.output_text.delta\ndata: {not json\n\n"],
    sentSystem: (body: any) => body.instructions,
    // Messages, then function_call items after the assistant's text, then function_call_output items.
    sentMessages: (body: any) => body.input,
    sentHistory: [
      { type: "message", role: "user", content: "Weather in Oslo and the time?" },
      { type: "message", role: "assistant", content: "Checking." },
      { type: "function_call", call_id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' },
      { type: "function_call", call_id: "call_b", name: "get_time", arguments: '{"zone":"UTC"}' },
      { type: "function_call_output", call_id: "call_a", output: "sunny" },
      { type: "function_call_output", call_id: "call_b", output: "boom" },
      { type: "message", role: "user", content: "And tomorrow?" },
      { type: "message", role: "assistant", content: "" },
      { type: "message", role: "assistant", content: "No idea." },
      { type: "message", role: "user", content: "Thanks." },
    ],
  },
] as const;

for (const provider of ["openai", "openai-compatible"] as const) {
  for (const { mode, useResponsesApi, ...wire } of modes) {
    describeProviderContract(`${provider} (${mode})`, {
      ...wire,
      provider,
      name: "gpt-test",
      structuredOutput: true,
      upstream,
      model: (o) => model({ provider, useResponsesApi, ...o }),
      credential: ["authorization", `Bearer ${API_KEY}`],
      toolCallIds: ["call_a", "call_b"],
      errorBody: () => ({ error: { message: "secret-body-text from the upstream", type: "server_error" } }),
      env: {
        OPENAI_API_KEY: "sk-from-env",
        OPENAI_BASE_URL: "http://from-env.example.invalid/v1",
        OPENAI_ORG_ID: "org-from-env",
        OPENAI_PROJECT_ID: "proj-from-env",
        OPENAI_CUSTOM_HEADERS: "X-From-Env: leaked",
        OPENAI_LOG: "debug",
      },
      envHeaders: ["openai-organization", "openai-project"],
      // openai-compatible has no endpoint of its own (see "needs a base URL" below).
      defaultURL: provider === "openai" ? `https://api.openai.com${wire.path}` : undefined,
    });
  }
}

describe.each(modes)("openai provider, $mode", ({ useResponsesApi, text }) => {
  const make = (o: Partial<OpenAIModelOptions> = {}) => model({ useResponsesApi, ...o });

  it("names the model in the body and asks for a stream", async () => {
    upstream.handler = (_r, res) => sse(res, text(["ok"]));
    await collect(make().stream(request([user])));
    expect(requests[0]!.body.model).toBe("gpt-test");
    expect(requests[0]!.body.stream).toBe(true);
  });

  it("sends reasoning effort and the response schema", async () => {
    upstream.handler = (_r, res) => sse(res, text(['{"a":1}']));
    const schema = { type: "object", properties: { a: { type: "number" } }, required: ["a"] };
    const m = make({ reasoningEffort: "high" });
    expect(m.structuredOutput).toBe(true);
    await collect(m.stream(request([user], { responseSchema: { name: "answer", schema } })));
    const body = requests[0]!.body;
    if (useResponsesApi) {
      expect(body.reasoning).toEqual({ effort: "high" });
      expect(body.text).toEqual({ format: { type: "json_schema", name: "answer", schema, strict: false } });
    } else {
      expect(body.reasoning_effort).toBe("high");
      expect(body.response_format).toEqual({ type: "json_schema", json_schema: { name: "answer", schema, strict: false } });
    }
  });

  it("leaves reasoning effort and the response format out when not asked", async () => {
    upstream.handler = (_r, res) => sse(res, text(["ok"]));
    await collect(make().stream(request([user])));
    const body = requests[0]!.body;
    for (const key of ["reasoning_effort", "response_format", "reasoning", "text"]) expect(body).not.toHaveProperty(key);
  });
});

describe("openai provider, specifics of each wire format", () => {
  it("chat completions: usage asked for in the stream, tools as functions, and an assistant turn with calls and no text as content null", async () => {
    upstream.handler = (_r, res) => sse(res, chatText(["Sunny; the clock failed."]));
    await collect(model().stream(request([user, assistantCalls, ...results, { id: "m5", role: "assistant", content: "noted" }])));

    const body = requests[0]!.body;
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } } } },
      { type: "function", function: { name: "get_time", description: "Time in a zone", parameters: { type: "object", properties: { zone: { type: "string" } } } } },
    ]);
    // The contract's history up to the results, but the assistant turn has no text.
    const [system, question, calls, resultA, resultB] = modes[0].sentHistory;
    expect(body.messages).toEqual([system, question, { ...calls, content: null }, resultA, resultB, { role: "assistant", content: "noted" }]);
  });

  it("responses API: tools as strict: false functions, and an assistant turn with calls and no text as function_call items only", async () => {
    upstream.handler = (_r, res) => sse(res, responsesText(["Sunny."]));
    await collect(model({ useResponsesApi: true }).stream(request([user, assistantCalls, ...results])));

    const body = requests[0]!.body;
    expect(body.tools).toEqual([
      { type: "function", name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false },
      { type: "function", name: "get_time", description: "Time in a zone", parameters: { type: "object", properties: { zone: { type: "string" } } }, strict: false },
    ]);
    expect(body.input).toEqual([
      { type: "message", role: "user", content: "Weather in Oslo and the time?" },
      { type: "function_call", call_id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' },
      { type: "function_call", call_id: "call_b", name: "get_time", arguments: '{"zone":"UTC"}' },
      { type: "function_call_output", call_id: "call_a", output: "sunny" },
      { type: "function_call_output", call_id: "call_b", output: "boom" },
    ]);
  });

  // Some servers that speak these protocols send a call's arguments as a JSON object rather than
  // the JSON text the protocol defines: the call reaches the loop as that object's JSON text,
  // never as "[object Object]" or as a non-string the loop cannot read.
  it("chat completions: arguments sent as an object are read as their JSON text", async () => {
    upstream.handler = (_r, res) =>
      sse(res, [
        chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: { city: "Oslo" } } }] }),
        chunk(null, { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 }),
        "data: [DONE]\n\n",
      ]);
    const events = await collect(model().stream(request([user])));
    expect(events).toContainEqual({ type: "tool_call", id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' });
  });

  it("responses API: arguments sent as an object are read as their JSON text", async () => {
    upstream.handler = (_r, res) =>
      sse(res, [
        ev("response.created", { response: { id: "resp_1", object: "response", status: "in_progress", output: [] } }),
        ev("response.output_item.done", { output_index: 0, item: { ...fnItem("fc_1", "call_a", "get_weather", ""), arguments: { city: "Oslo" } } }),
        ev("response.output_item.done", { output_index: 1, item: { ...fnItem("fc_2", "call_b", "get_time", ""), arguments: undefined } }),
        completed(20, 9),
      ]);
    const events = await collect(model({ useResponsesApi: true }).stream(request([user])));
    expect(events.filter((e) => e.type === "tool_call")).toEqual([
      { type: "tool_call", id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' },
      { type: "tool_call", id: "call_b", name: "get_time", arguments: "" },
    ]);
  });

  it("responses API: a function call without a call id gets one of its own, as in chat completions", async () => {
    upstream.handler = (_r, res) =>
      sse(res, [ev("response.output_item.done", { output_index: 0, item: { ...fnItem("fc_1", "", "get_weather", '{"city":"Oslo"}'), call_id: undefined } }), completed(20, 9)]);
    const calls = (await collect(model({ useResponsesApi: true }).stream(request([user])))).filter((e) => e.type === "tool_call");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: "get_weather", arguments: '{"city":"Oslo"}' });
    expect(calls[0]!.type === "tool_call" && calls[0]!.id).toMatch(/^call_[0-9a-f-]{36}$/);
  });
});

describe("openai provider, a tool call without a name", () => {
  it.each([
    [
      "chat completions",
      false,
      () => [chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_a", type: "function", function: { arguments: "{}" } }] }), "data: [DONE]\n\n"],
    ],
    ["responses API", true, () => [ev("response.output_item.done", { output_index: 0, item: fnItem("fc_1", "call_a", "", "{}") }), completed(20, 9)]],
  ])("%s: fails the turn as a model error", async (_mode, useResponsesApi, events) => {
    upstream.handler = (_r, res) => sse(res, events());
    const error = await failure(collect(model({ useResponsesApi }).stream(request([user]))));
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toMatch(/^openai request failed: tool call (0 )?without a name$/);
  });
});

describe("openai provider, retries", () => {
  it(`waits what Retry-After asks before a retry, but at most ${MAX_BACKOFF_MS} ms`, async () => {
    upstream.handler = (_r, res, attempt) => {
      if (attempt > 1) return sse(res, chatText(["ok"]));
      res.writeHead(429, { "content-type": "application/json", "retry-after": "30" });
      res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit_error" } }));
    };
    const started = Date.now();
    const events = await collect(model({ maxRetries: 1 }).stream(request([user])));
    const waited = Date.now() - started;
    expect(requests).toHaveLength(2);
    expect(events[0]).toEqual({ type: "text", text: "ok" });
    expect(waited).toBeGreaterThanOrEqual(MAX_BACKOFF_MS - 50);
    expect(waited).toBeLessThan(MAX_BACKOFF_MS + 1000);
  });
});

describe("openai-compatible", () => {
  it("needs a base URL", () => {
    expect(() => model({ provider: "openai-compatible", baseURL: undefined })).toThrow(/OPENAI_BASE_URL/);
  });
});
