/**
 * The Anthropic provider through the real `@anthropic-ai/sdk` client against a loopback server
 * that speaks the Messages streaming protocol (typed server-sent events).
 */
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ProviderOptions } from "../../src/agent/model.js";
import { createAnthropicModel } from "../../src/agent/providers/anthropic.js";
import { hasCode } from "../../src/errors.js";
import type { Message } from "../../src/store/ports.js";
import { abortAtFirstEvent, collect, conversation, failure, loopbackUpstream, request, sse, sseLate, sseOpen } from "./support.js";

const API_KEY = "sk-ant-loopback-test-key";

const upstream = loopbackUpstream();
const { requests, fetchedUrls } = upstream;

afterEach(() => {
  vi.unstubAllEnvs();
});

function model(overrides: Partial<ProviderOptions> = {}) {
  return createAnthropicModel({ model: "claude-test", apiKey: API_KEY, baseURL: upstream.baseURL, maxRetries: 0, fetch: upstream.fetch, ...overrides });
}

/** Errors the SDK retries at once (it treats a zero delay as "use the default backoff"). */
function failWith(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-type": "application/json", "retry-after-ms": "1", "retry-after": "0" });
  res.end(JSON.stringify({ type: "error", error: { type: "api_error", message: "secret-body-text from the upstream" } }));
}

// --- Messages streaming wire format ------------------------------------------------------------

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

const messageStart = (input_tokens: number) =>
  ev("message_start", {
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens, output_tokens: 1, cache_creation_input_tokens: null, cache_read_input_tokens: null },
    },
  });
const messageEnd = (stop_reason: string, output_tokens: number) => [
  ev("message_delta", { delta: { stop_reason, stop_sequence: null }, usage: { output_tokens } }),
  ev("message_stop", {}),
];

const textFrames = (deltas: string[]) => [
  messageStart(11),
  ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  ": a comment the parser skips\n\n",
  ev("ping", {}),
  ...deltas.map((text) => ev("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
  ev("content_block_stop", { index: 0 }),
  ...messageEnd("end_turn", 7),
];

const toolFrames = () => [
  messageStart(20),
  ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Checking." } }),
  ev("content_block_stop", { index: 0 }),
  ev("content_block_start", { index: 1, content_block: { type: "tool_use", id: "toolu_a", name: "get_weather", input: {} } }),
  ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: "" } }),
  ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: '{"ci' } }),
  ev("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: 'ty": "Oslo"}' } }),
  ev("content_block_stop", { index: 1 }),
  ev("content_block_start", { index: 2, content_block: { type: "tool_use", id: "toolu_b", name: "get_time", input: {} } }),
  ev("content_block_delta", { index: 2, delta: { type: "input_json_delta", partial_json: '{"zone":' } }),
  ev("content_block_delta", { index: 2, delta: { type: "input_json_delta", partial_json: '"UTC"}' } }),
  ev("content_block_stop", { index: 2 }),
  ev("content_block_start", { index: 3, content_block: { type: "tool_use", id: "toolu_c", name: "get_time", input: {} } }),
  ev("content_block_stop", { index: 3 }),
  ...messageEnd("tool_use", 9),
];

// --- shared conversation ----------------------------------------------------------------------

const { user, assistantCalls, results } = conversation(["toolu_a", "toolu_b"], "Checking.");

describe("anthropic provider", () => {
  it("streams text in several deltas, then usage, with the key as the SDK sends it (Bearer)", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["Hel", "lo, ", "world"]));
    const m = model();
    expect(m.provider).toBe("anthropic");
    expect(m.name).toBe("claude-test");
    expect(m.structuredOutput).toBe(false);
    const events = await collect(m.stream(request([user])));
    expect(events).toEqual([
      { type: "text", text: "Hel" },
      { type: "text", text: "lo, " },
      { type: "text", text: "world" },
      { type: "usage", input_tokens: 11, output_tokens: 7 },
    ]);
    expect(requests).toHaveLength(1);
    const r = requests[0]!;
    expect(r.method).toBe("POST");
    expect(r.path).toBe("/v1/messages");
    // This SDK release sends an API key as a bearer credential.
    expect(r.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(JSON.stringify(r.headers)).not.toContain("sk-from-env");
    expect(r.headers["anthropic-version"]).toBeTruthy();
    expect(r.body).toMatchObject({ model: "claude-test", max_tokens: 4096, stream: true, system: "You are a test agent." });
    expect(r.body.messages).toEqual([{ role: "user", content: "Weather in Oslo and the time?" }]);
    expect(r.body.tools).toEqual([
      { name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { city: { type: "string" } } } },
      { name: "get_time", description: "Time in a zone", input_schema: { type: "object", properties: { zone: { type: "string" } } } },
    ]);
  });

  it("gathers parallel tool_use blocks whose arguments arrive in pieces", async () => {
    upstream.handler = (_r, res) => sse(res, toolFrames());
    const events = await collect(model().stream(request([user])));
    expect(events).toEqual([
      { type: "text", text: "Checking." },
      { type: "tool_call", id: "toolu_a", name: "get_weather", arguments: '{"city": "Oslo"}' },
      { type: "tool_call", id: "toolu_b", name: "get_time", arguments: '{"zone":"UTC"}' },
      { type: "tool_call", id: "toolu_c", name: "get_time", arguments: "{}" },
      { type: "usage", input_tokens: 20, output_tokens: 9 },
    ]);
  });

  it("omits tools and system when there are none", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user], { tools: [], system: "" })));
    expect(requests[0]!.body).not.toHaveProperty("tools");
    expect(requests[0]!.body).not.toHaveProperty("system");
  });

  it("sends tool results grouped in one user message right after the assistant turn", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["Sunny; the clock failed."]));
    const history: Message[] = [
      user,
      assistantCalls,
      ...results,
      { id: "m5", role: "user", content: "And tomorrow?" },
      { id: "m6", role: "assistant", content: "" },
      { id: "m7", role: "assistant", content: "No idea." },
      { id: "m8", role: "user", content: "Thanks." },
    ];
    const events = await collect(model().stream(request(history)));
    expect(events[0]).toEqual({ type: "text", text: "Sunny; the clock failed." });
    expect(requests[0]!.body.messages).toEqual([
      { role: "user", content: "Weather in Oslo and the time?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool_use", id: "toolu_a", name: "get_weather", input: { city: "Oslo" } },
          { type: "tool_use", id: "toolu_b", name: "get_time", input: { zone: "UTC" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_a", content: "sunny", is_error: false },
          { type: "tool_result", tool_use_id: "toolu_b", content: "boom", is_error: true },
          { type: "text", text: "And tomorrow?" },
        ],
      },
      { role: "assistant", content: "No idea." },
      { role: "user", content: "Thanks." },
    ]);
  });

  it("sends an assistant turn with tool calls and no text as tool_use blocks only", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user, { ...assistantCalls, content: "" }, ...results])));
    const messages = requests[0]!.body.messages;
    expect(messages[1].content.map((b: { type: string }) => b.type)).toEqual(["tool_use", "tool_use"]);
    expect(messages).toHaveLength(3);
  });

  it("retries a 429 and a 500, then succeeds on the third attempt", async () => {
    upstream.handler = (_r, res, attempt) => (attempt === 1 ? failWith(res, 429) : attempt === 2 ? failWith(res, 500) : sse(res, textFrames(["fine"])));
    const events = await collect(model({ maxRetries: 2 }).stream(request([user])));
    expect(requests).toHaveLength(3);
    expect(events[0]).toEqual({ type: "text", text: "fine" });
  });

  it("gives up with ModelError after maxRetries + 1 attempts, without the body in the message", async () => {
    upstream.handler = (_r, res, attempt) => failWith(res, attempt === 1 ? 429 : 500);
    const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
    expect(requests).toHaveLength(3);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("anthropic request failed: status 500");
    expect(error.message).not.toContain("secret-body-text");
  });

  it("does not retry a 400", async () => {
    upstream.handler = (_r, res) => failWith(res, 400);
    const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
    expect(requests).toHaveLength(1);
    expect(error.message).toBe("anthropic request failed: status 400");
  });

  it("turns an error event in the stream into ModelError", async () => {
    upstream.handler = (_r, res) =>
      sse(res, [
        messageStart(5),
        ev("error", { error: { type: "overloaded_error", message: "secret-body-text overloaded" } }),
      ]);
    const error = await failure(collect(model().stream(request([user]))));
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("anthropic request failed: error in stream");
  });

  it("turns a request past the timeout into ModelError", async () => {
    upstream.handler = (_r, res) => sseLate(res, 1500, () => textFrames(["late"]));
    const started = Date.now();
    const error = await failure(collect(model({ timeoutMs: 200 }).stream(request([user]))));
    expect(Date.now() - started).toBeLessThan(1400);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("anthropic request failed: timeout");
  });

  it("names a refused connection", async () => {
    const error = await failure(collect(model({ baseURL: "http://127.0.0.1:1" }).stream(request([user]))));
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("anthropic request failed: connection error");
  });

  it("rethrows the signal's reason when the run is aborted mid-stream", async () => {
    const controller = new AbortController();
    // The rest never comes; the client aborts.
    upstream.handler = (_r, res) => sseOpen(res, textFrames(["first"]).slice(0, 5));
    const reason = new Error("run cancelled");
    const { events, error } = await abortAtFirstEvent(model().stream(request([user], { signal: controller.signal })), controller, reason);
    expect(events).toEqual([{ type: "text", text: "first" }]);
    expect(error).toBe(reason);
  });

  it("rethrows the reason of a signal aborted before the request", async () => {
    const controller = new AbortController();
    const reason = new Error("already cancelled");
    controller.abort(reason);
    const error = await failure(collect(model().stream(request([user], { signal: controller.signal }))));
    expect(error).toBe(reason);
    expect(requests).toHaveLength(0);
  });

  it("ignores ANTHROPIC_* variables when the values are given", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-from-env");
    vi.stubEnv("ANTHROPIC_AUTH_TOKEN", "token-from-env");
    vi.stubEnv("ANTHROPIC_BASE_URL", "http://env.example.invalid");
    vi.stubEnv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: leaked");
    vi.stubEnv("ANTHROPIC_LOG", "debug");
    const logged = vi.spyOn(console, "log");
    const debug = vi.spyOn(console, "debug");
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user])));
    const headers = requests[0]!.headers;
    expect(headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(headers).not.toHaveProperty("x-from-env");
    expect(JSON.stringify(headers)).not.toContain("from-env");
    expect(logged).not.toHaveBeenCalled();
    expect(debug).not.toHaveBeenCalled();
    logged.mockRestore();
    debug.mockRestore();
  });

  it("defaults to the public endpoint without a baseURL (refused by the loopback-only transport)", async () => {
    const error = await failure(collect(model({ baseURL: undefined }).stream(request([user]))));
    expect(hasCode(error, "model_error")).toBe(true);
    expect(fetchedUrls.map((u) => new URL(u).host)).toEqual(["api.anthropic.com"]);
    fetchedUrls.length = 0; // refused before anything was sent
  });
});
