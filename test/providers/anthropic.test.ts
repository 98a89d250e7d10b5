/**
 * The Anthropic provider through the real `@anthropic-ai/sdk` client against a loopback server
 * that speaks the Messages streaming protocol (typed server-sent events). The provider contract
 * (contract.ts) runs first; the tests after it are the ones only this provider has.
 */
import { describe, expect, it } from "vitest";
import type { ProviderOptions } from "../../src/agent/model.js";
import { createAnthropicModel } from "../../src/agent/providers/anthropic.js";
import { describeProviderContract } from "./contract.js";
import { collect, conversation, failure, loopbackUpstream, request, sse, sseOpen, within } from "./support.js";

const API_KEY = "sk-ant-loopback-test-key";

const upstream = loopbackUpstream();
const { requests } = upstream;

function model(overrides: Partial<ProviderOptions> = {}) {
  return createAnthropicModel({ model: "claude-test", apiKey: API_KEY, baseURL: upstream.baseURL, maxRetries: 0, fetch: upstream.fetch, ...overrides });
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

/** A tool_use block at `index` whose input arrives in these pieces. */
const toolUse = (index: number, id: string, name: string, pieces: string[]) => [
  ev("content_block_start", { index, content_block: { type: "tool_use", id, name, input: {} } }),
  ...pieces.map((partial_json) => ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } })),
  ev("content_block_stop", { index }),
];

const toolFrames = () => [
  messageStart(20),
  ...toolUse(0, "toolu_a", "get_weather", ['{"ci', 'ty":"Oslo"}']),
  ...toolUse(1, "toolu_b", "get_time", ['{"zone":', '"UTC"}']),
  ...messageEnd("tool_use", 9),
];

// --- shared conversation ----------------------------------------------------------------------

const { user, assistantCalls, results } = conversation(["toolu_a", "toolu_b"], "Checking.");

describeProviderContract("anthropic", {
  provider: "anthropic",
  name: "claude-test",
  structuredOutput: false,
  upstream,
  model,
  path: "/v1/messages",
  // This SDK release sends an API key as a bearer credential.
  credential: ["authorization", `Bearer ${API_KEY}`],
  sentSystem: (body) => body.system,
  // Tool results go in one user message right after the assistant turn; roles alternate.
  sentMessages: (body) => body.messages,
  sentHistory: [
    { role: "user", content: "Weather in Oslo and the time?" },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Checking." },
        { type: "tool_use", id: "call_a", name: "get_weather", input: { city: "Oslo" } },
        { type: "tool_use", id: "call_b", name: "get_time", input: { zone: "UTC" } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_a", content: "sunny", is_error: false },
        { type: "tool_result", tool_use_id: "call_b", content: "boom", is_error: true },
        { type: "text", text: "And tomorrow?" },
      ],
    },
    { role: "assistant", content: "No idea." },
    { role: "user", content: "Thanks." },
  ],
  text: textFrames,
  textStart: () => textFrames(["first"]).slice(0, 5),
  toolCalls: toolFrames,
  toolCallIds: ["toolu_a", "toolu_b"],
  errorBody: () => ({ type: "error", error: { type: "api_error", message: "secret-body-text from the upstream" } }),
  errorInStream: () => [messageStart(5), ev("error", { error: { type: "overloaded_error", message: "secret-body-text overloaded" } })],
  malformed: () => [messageStart(5), "event: content_block_delta\ndata: {not json\n\n"],
  env: {
    ANTHROPIC_API_KEY: "sk-from-env",
    ANTHROPIC_AUTH_TOKEN: "token-from-env",
    ANTHROPIC_BASE_URL: "http://from-env.example.invalid",
    ANTHROPIC_CUSTOM_HEADERS: "X-From-Env: leaked",
    ANTHROPIC_LOG: "debug",
  },
  defaultURL: "https://api.anthropic.com/v1/messages",
});

describe("anthropic provider", () => {
  it("times out a stream that only pings: a keep-alive is not progress", async () => {
    let pings: ReturnType<typeof setInterval> | undefined;
    upstream.handler = (_r, res) => {
      sseOpen(res, textFrames(["first"]).slice(0, 5));
      pings = setInterval(() => res.write(ev("ping", {})), 50);
      res.on("close", () => clearInterval(pings));
    };
    const started = Date.now();
    const error = await failure(collect(model({ timeoutMs: 200 }).stream(request([user]))));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(error.message).toBe("anthropic request failed: timeout");
    expect(await within(requests[0]!.closed.then(() => "closed"), 1000)).toBe("closed");
  });

  it("sends a text turn in the Messages shape, with the API version", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user])));
    const r = requests[0]!;
    expect(r.headers["anthropic-version"]).toBeTruthy();
    expect(r.body).toMatchObject({ model: "claude-test", max_tokens: 4096, stream: true, system: "You are a test agent." });
    expect(r.body.messages).toEqual([{ role: "user", content: "Weather in Oslo and the time?" }]);
    expect(r.body.tools).toEqual([
      { name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { city: { type: "string" } } } },
      { name: "get_time", description: "Time in a zone", input_schema: { type: "object", properties: { zone: { type: "string" } } } },
    ]);
  });

  it("streams text before tool_use blocks, passes input JSON through as sent, and makes an empty input {}", async () => {
    upstream.handler = (_r, res) =>
      sse(res, [
        messageStart(20),
        ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
        ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Checking." } }),
        ev("content_block_stop", { index: 0 }),
        ...toolUse(1, "toolu_a", "get_weather", ["", '{"ci', 'ty": "Oslo"}']),
        ...toolUse(2, "toolu_b", "get_time", ['{"zone":', '"UTC"}']),
        ...toolUse(3, "toolu_c", "get_time", []),
        ...messageEnd("tool_use", 9),
      ]);
    const events = await collect(model().stream(request([user])));
    expect(events).toEqual([
      { type: "text", text: "Checking." },
      { type: "tool_call", id: "toolu_a", name: "get_weather", arguments: '{"city": "Oslo"}' },
      { type: "tool_call", id: "toolu_b", name: "get_time", arguments: '{"zone":"UTC"}' },
      { type: "tool_call", id: "toolu_c", name: "get_time", arguments: "{}" },
      { type: "usage", input_tokens: 20, output_tokens: 9 },
    ]);
  });

  it("sends an assistant turn with tool calls and no text as tool_use blocks only", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user, { ...assistantCalls, content: "" }, ...results])));
    const messages = requests[0]!.body.messages;
    expect(messages[1].content.map((b: { type: string }) => b.type)).toEqual(["tool_use", "tool_use"]);
    expect(messages).toHaveLength(3);
  });
});
