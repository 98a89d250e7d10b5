/**
 * The OpenAI provider through the real `openai` SDK against a loopback server that speaks the
 * streaming protocols (chat completions SSE with `[DONE]`; typed responses-API events).
 */
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createOpenAIModel, type OpenAIModelOptions } from "../../src/agent/providers/openai.js";
import { hasCode } from "../../src/errors.js";
import { abortAtFirstEvent, collect, conversation, failure, loopbackUpstream, request, sse, sseLate, sseOpen } from "./support.js";

const API_KEY = "sk-loopback-test-key";

const upstream = loopbackUpstream({ basePath: "/v1" });
const { requests, fetchedUrls } = upstream;

afterEach(() => {
  vi.unstubAllEnvs();
});

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

/** Errors the SDK retries at once: both retry headers say zero. */
function failWith(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-type": "application/json", "retry-after-ms": "0", "retry-after": "0" });
  res.end(JSON.stringify({ error: { message: "secret-body-text from the upstream", type: "server_error" } }));
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
  { mode: "chat completions", path: "/v1/chat/completions", useResponsesApi: false, text: chatText, toolCalls: chatToolCalls },
  { mode: "responses API", path: "/v1/responses", useResponsesApi: true, text: responsesText, toolCalls: responsesToolCalls },
] as const;

describe.each(modes)("openai provider, $mode", ({ path, useResponsesApi, text, toolCalls }) => {
  const make = (o: Partial<OpenAIModelOptions> = {}) => model({ useResponsesApi, ...o });

  it("streams text in several deltas, then usage, with the key as Bearer", async () => {
    upstream.handler = (_r, res) => sse(res, text(["Hel", "lo, ", "world"]));
    const events = await collect(make().stream(request([user])));
    expect(events).toEqual([
      { type: "text", text: "Hel" },
      { type: "text", text: "lo, " },
      { type: "text", text: "world" },
      { type: "usage", input_tokens: 11, output_tokens: 7 },
    ]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.method).toBe("POST");
    expect(requests[0]!.path).toBe(path);
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(requests[0]!.body.model).toBe("gpt-test");
    expect(requests[0]!.body.stream).toBe(true);
  });

  it("gathers parallel tool calls whose arguments arrive in pieces", async () => {
    upstream.handler = (_r, res) => sse(res, toolCalls());
    const events = await collect(make().stream(request([user])));
    expect(events.filter((e) => e.type === "tool_call")).toEqual([
      { type: "tool_call", id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' },
      { type: "tool_call", id: "call_b", name: "get_time", arguments: '{"zone":"UTC"}' },
    ]);
    expect(events.at(-1)).toEqual({ type: "usage", input_tokens: 20, output_tokens: 9 });
    expect(events.some((e) => e.type === "text")).toBe(false);
  });

  it("omits tools when there are none", async () => {
    upstream.handler = (_r, res) => sse(res, text(["ok"]));
    await collect(make().stream(request([user], { tools: [] })));
    expect(requests[0]!.body).not.toHaveProperty("tools");
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

  it("retries a 429 and a 500, then succeeds on the third attempt", async () => {
    upstream.handler = (_r, res, attempt) => (attempt === 1 ? failWith(res, 429) : attempt === 2 ? failWith(res, 500) : sse(res, text(["fine"])));
    const events = await collect(make({ maxRetries: 2 }).stream(request([user])));
    expect(requests).toHaveLength(3);
    expect(events[0]).toEqual({ type: "text", text: "fine" });
  });

  it("gives up with ModelError after 3 failed attempts, without the body in the message", async () => {
    upstream.handler = (_r, res, attempt) => failWith(res, attempt === 1 ? 429 : 500);
    const error = await failure(collect(make({ maxRetries: 2 }).stream(request([user]))));
    expect(requests).toHaveLength(3);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("openai request failed: status 500");
    expect(error.message).not.toContain("secret-body-text");
  });

  it("turns a request past the timeout into ModelError", async () => {
    upstream.handler = (_r, res) => sseLate(res, 1500, () => text(["late"]));
    const started = Date.now();
    const error = await failure(collect(make({ timeoutMs: 200 }).stream(request([user]))));
    expect(Date.now() - started).toBeLessThan(1400);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("openai request failed: timeout");
  });

  it("rethrows the signal's reason when the run is aborted mid-stream", async () => {
    const controller = new AbortController();
    // The rest never comes; the client aborts.
    upstream.handler = (_r, res) => sseOpen(res, [text(["first"])[useResponsesApi ? 2 : 1]!]);
    const reason = new Error("run cancelled");
    const { events, error } = await abortAtFirstEvent(make().stream(request([user], { signal: controller.signal })), controller, reason);
    expect(events).toEqual([{ type: "text", text: "first" }]);
    expect(error).toBe(reason);
  });

  it("names the provider and the kind for an openai-compatible endpoint that refuses connections", async () => {
    const error = await failure(
      collect(make({ provider: "openai-compatible", baseURL: "http://127.0.0.1:1/v1" }).stream(request([user]))),
    );
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("openai-compatible request failed: connection error");
  });
});

describe("openai provider, the conversation sent back", () => {
  it("chat completions: system first, assistant tool calls, tool results by tool_call_id", async () => {
    upstream.handler = (_r, res, attempt) => sse(res, attempt === 1 ? chatToolCalls() : chatText(["Sunny; the clock failed."]));
    const m = model();
    const first = await collect(m.stream(request([user])));
    expect(first.filter((e) => e.type === "tool_call")).toHaveLength(2);
    const events = await collect(m.stream(request([user, assistantCalls, ...results, { id: "m5", role: "assistant", content: "noted" }])));
    expect(events[0]).toEqual({ type: "text", text: "Sunny; the clock failed." });

    const body = requests[1]!.body;
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } } } },
      { type: "function", function: { name: "get_time", description: "Time in a zone", parameters: { type: "object", properties: { zone: { type: "string" } } } } },
    ]);
    expect(body.messages).toEqual([
      { role: "system", content: "You are a test agent." },
      { role: "user", content: "Weather in Oslo and the time?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
          { id: "call_b", type: "function", function: { name: "get_time", arguments: '{"zone":"UTC"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "sunny" },
      { role: "tool", tool_call_id: "call_b", content: "boom" },
      { role: "assistant", content: "noted" },
    ]);
  });

  it("responses API: instructions, function_call and function_call_output items", async () => {
    upstream.handler = (_r, res, attempt) => sse(res, attempt === 1 ? responsesToolCalls() : responsesText(["Sunny."]));
    const m = model({ useResponsesApi: true });
    await collect(m.stream(request([user])));
    await collect(m.stream(request([user, { ...assistantCalls, content: "Let me look." }, ...results])));

    const body = requests[1]!.body;
    expect(body.instructions).toBe("You are a test agent.");
    expect(body.tools).toEqual([
      { type: "function", name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false },
      { type: "function", name: "get_time", description: "Time in a zone", parameters: { type: "object", properties: { zone: { type: "string" } } }, strict: false },
    ]);
    expect(body.input).toEqual([
      { type: "message", role: "user", content: "Weather in Oslo and the time?" },
      { type: "message", role: "assistant", content: "Let me look." },
      { type: "function_call", call_id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' },
      { type: "function_call", call_id: "call_b", name: "get_time", arguments: '{"zone":"UTC"}' },
      { type: "function_call_output", call_id: "call_a", output: "sunny" },
      { type: "function_call_output", call_id: "call_b", output: "boom" },
    ]);
  });
});

describe("openai provider, the environment", () => {
  const stubEnv = () => {
    vi.stubEnv("OPENAI_API_KEY", "sk-from-env");
    vi.stubEnv("OPENAI_BASE_URL", "http://env.example.invalid/v1");
    vi.stubEnv("OPENAI_ORG_ID", "org-from-env");
    vi.stubEnv("OPENAI_PROJECT_ID", "proj-from-env");
    vi.stubEnv("OPENAI_CUSTOM_HEADERS", "X-From-Env: leaked");
    vi.stubEnv("OPENAI_LOG", "debug");
  };

  it("ignores OPENAI_* variables when the values are given", async () => {
    stubEnv();
    const logged = vi.spyOn(console, "log");
    const debug = vi.spyOn(console, "debug");
    upstream.handler = (_r, res) => sse(res, chatText(["ok"]));
    await collect(model().stream(request([user])));
    const headers = requests[0]!.headers;
    expect(headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(headers).not.toHaveProperty("x-from-env");
    expect(headers).not.toHaveProperty("openai-organization");
    expect(headers).not.toHaveProperty("openai-project");
    expect(logged).not.toHaveBeenCalled();
    expect(debug).not.toHaveBeenCalled();
    logged.mockRestore();
    debug.mockRestore();
  });

  it("openai without a base URL goes to the OpenAI endpoint, not OPENAI_BASE_URL", async () => {
    stubEnv();
    const seen: string[] = [];
    const refuse: typeof fetch = async (input) => {
      seen.push(String(input instanceof Request ? input.url : input));
      throw new TypeError("offline");
    };
    const error = await failure(collect(model({ baseURL: undefined, fetch: refuse }).stream(request([user]))));
    expect(seen).toEqual(["https://api.openai.com/v1/chat/completions"]);
    expect(error.message).toBe("openai request failed: connection error");
  });

  it("openai-compatible needs a base URL", () => {
    expect(() => model({ provider: "openai-compatible", baseURL: undefined })).toThrow(/OPENAI_BASE_URL/);
  });
});
