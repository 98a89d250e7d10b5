/**
 * The Gemini provider (REST over fetch, no SDK) against a loopback server that speaks
 * streamGenerateContent with `alt=sse`. The provider contract (contract.ts) runs first; the tests
 * after it are the ones only this provider has.
 */
import { describe, expect, it } from "vitest";
import { hasCode } from "../../src/errors.js";
import type { ModelRequest, ProviderOptions } from "../../src/agent/model.js";
import { createGeminiModel } from "../../src/agent/providers/gemini.js";
import type { Message } from "../../src/store/ports.js";
import { describeProviderContract } from "./contract.js";
import { collect, conversation, failure, loopbackUpstream, request as baseRequest, sse, timeTool, weatherTool } from "./support.js";

const API_KEY = "AIza-loopback-test-key";

// Nothing but the loopback server is ever asked, and never with the key in the URL.
const upstream = loopbackUpstream({ checkUrl: (url) => expect(url).not.toContain(API_KEY) });
const { requests } = upstream;

function model(overrides: Partial<ProviderOptions> = {}) {
  return createGeminiModel({ model: "gemini-2.5-flash", apiKey: API_KEY, baseURL: upstream.baseURL, maxRetries: 0, fetch: upstream.fetch, ...overrides });
}

const weatherParams = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { city: { type: "string" } }, additionalProperties: false };

/** The shared request, get_weather's schema with `$schema` and `additionalProperties`. */
function request(messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return baseRequest(messages, { tools: [{ ...weatherTool, parameters: weatherParams }, timeTool], ...extra });
}

// --- streamGenerateContent wire format ----------------------------------------------------------

const chunk = (parts: object[] | null, usage?: { prompt: number; out: number }, crlf = false) => {
  const data = JSON.stringify({
    ...(parts ? { candidates: [{ content: { role: "model", parts }, index: 0 }] } : {}),
    ...(usage ? { usageMetadata: { promptTokenCount: usage.prompt, candidatesTokenCount: usage.out, totalTokenCount: usage.prompt + usage.out } } : {}),
    modelVersion: "gemini-2.5-flash",
  });
  return crlf ? `data: ${data}\r\n\r\n` : `data: ${data}\n\n`;
};

const textFrames = (deltas: string[]) => [
  ...deltas.map((text, i) => chunk([{ text }], { prompt: 11, out: i + 1 }, i === 1)),
  chunk(null, { prompt: 11, out: 7 }),
];

// --- shared conversation ----------------------------------------------------------------------

const { user, assistantCalls, results } = conversation(["call_x", "call_y"], "Checking.");

describeProviderContract("gemini", {
  provider: "gemini",
  name: "gemini-2.5-flash",
  structuredOutput: false,
  upstream,
  model,
  path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
  credential: ["x-goog-api-key", API_KEY],
  sentSystem: (body) => body.systemInstruction?.parts?.[0]?.text,
  // Model turns carry functionCall parts; the results go in one user turn as functionResponse parts.
  sentMessages: (body) => body.contents,
  sentHistory: [
    { role: "user", parts: [{ text: "Weather in Oslo and the time?" }] },
    {
      role: "model",
      parts: [
        { text: "Checking." },
        { functionCall: { name: "get_weather", args: { city: "Oslo" } } },
        { functionCall: { name: "get_time", args: { zone: "UTC" } } },
      ],
    },
    {
      role: "user",
      parts: [
        { functionResponse: { name: "get_weather", response: { content: "sunny" } } },
        { functionResponse: { name: "get_time", response: { content: "boom", is_error: true } } },
        { text: "And tomorrow?" },
      ],
    },
    { role: "model", parts: [{ text: "No idea." }] },
    { role: "user", parts: [{ text: "Thanks." }] },
  ],
  text: textFrames,
  textStart: () => [chunk([{ text: "first" }])],
  // Gemini sends each call whole, without an id.
  toolCalls: () => [
    chunk(
      [{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }, { functionCall: { name: "get_time", args: { zone: "UTC" } } }],
      { prompt: 20, out: 9 },
    ),
  ],
  errorBody: (status) => ({ error: { code: status, message: "secret-body-text from the upstream", status: "UNAVAILABLE" } }),
  errorInStream: () => [chunk([{ text: "a" }]), `data: ${JSON.stringify({ error: { code: 500, message: "secret-body-text" } })}\n\n`],
  malformed: () => ["data: {not json\n\n"],
  env: {
    GEMINI_API_KEY: "key-from-env",
    GOOGLE_API_KEY: "key-from-env",
    GOOGLE_GEMINI_BASE_URL: "http://from-env.example.invalid",
  },
  defaultURL: "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
});

describe("gemini provider", () => {
  it("sends a text turn as streamGenerateContent: the key only in x-goog-api-key, declarations without $schema", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user])));
    const r = requests[0]!;
    expect(r.headers).not.toHaveProperty("authorization");
    expect(r.body.systemInstruction).toEqual({ parts: [{ text: "You are a test agent." }] });
    expect(r.body.contents).toEqual([{ role: "user", parts: [{ text: "Weather in Oslo and the time?" }] }]);
    expect(r.body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: "get_weather",
            description: "Weather for a city",
            parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, additionalProperties: false },
          },
          { name: "get_time", description: "Time in a zone", parametersJsonSchema: { type: "object", properties: { zone: { type: "string" } } } },
        ],
      },
    ]);
    expect(r.body).not.toHaveProperty("generationConfig");
  });

  it("reads events split across writes, multi-line data, and skips thought parts", async () => {
    upstream.handler = async (_r, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const whole = chunk([{ text: "thinking...", thought: true }, { text: "A" }]) + chunk([{ text: "B" }], { prompt: 3, out: 2 });
      for (let i = 0; i < whole.length; i += 7) {
        res.write(whole.slice(i, i + 7));
        await new Promise((r) => setTimeout(r, 1));
      }
      res.write(': keep-alive\n\ndata: {"candidates":[{"content":{"parts":\ndata: [{"text":"C"}]}}]}\n\n');
      res.end();
    };
    const events = await collect(model().stream(request([user])));
    expect(events).toEqual([
      { type: "text", text: "A" },
      { type: "text", text: "B" },
      { type: "text", text: "C" },
      { type: "usage", input_tokens: 3, output_tokens: 2 },
    ]);
  });

  it("turns parallel functionCall parts into tool calls with unique ids", async () => {
    upstream.handler = (_r, res) =>
      sse(res, [
        chunk([{ text: "Checking." }]),
        chunk(
          [
            { functionCall: { name: "get_weather", args: { city: "Oslo" } }, thoughtSignature: "c2lnLTE=" },
            { functionCall: { name: "get_time", args: { zone: "UTC" } } },
            { functionCall: { id: "gem-3", name: "get_time" } },
          ],
          { prompt: 20, out: 9 },
        ),
      ]);
    const events = await collect(model().stream(request([user])));
    expect(events[0]).toEqual({ type: "text", text: "Checking." });
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls.map((c) => [c.name, c.arguments])).toEqual([
      ["get_weather", '{"city":"Oslo"}'],
      ["get_time", '{"zone":"UTC"}'],
      ["get_time", "{}"],
    ]);
    expect(calls[0]!.id).toMatch(/^call_/);
    expect(calls[1]!.id).toMatch(/^call_/);
    expect(calls[2]!.id).toBe("gem-3");
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    expect(events.at(-1)).toEqual({ type: "usage", input_tokens: 20, output_tokens: 9 });

    // A second stream never reuses an id.
    const again = (await collect(model().stream(request([user])))).filter((e) => e.type === "tool_call");
    expect(again.map((c) => c.id)).not.toContain(calls[0]!.id);
  });

  it("fails the turn as a malformed answer when a functionCall has no name", async () => {
    upstream.handler = (_r, res) => sse(res, [chunk([{ functionCall: { args: { city: "Oslo" } } }], { prompt: 20, out: 9 })]);
    const error = await failure(collect(model().stream(request([user]))));
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("gemini request failed: malformed response");
  });

  it("Gemini 3: replays the thought signature it received, else Google's skip value on the first call", async () => {
    upstream.handler = (_r, res, attempt) =>
      sse(
        res,
        attempt === 1
          ? [
              chunk([
                { functionCall: { name: "get_weather", args: { city: "Oslo" } }, thoughtSignature: "c2lnLTE=" },
                { functionCall: { name: "get_time", args: { zone: "UTC" } } },
              ]),
            ]
          : textFrames(["ok"]),
      );
    const m = model({ model: "gemini-3-pro-preview" });
    const calls = (await collect(m.stream(request([user])))).filter((e) => e.type === "tool_call");
    const assistant: Message = {
      id: "a",
      role: "assistant",
      content: "",
      tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: JSON.parse(c.arguments) })),
    };
    const older: Message = { ...assistantCalls, id: "old" };
    await collect(
      m.stream(
        request([
          user,
          older,
          ...results,
          assistant,
          { id: "r1", role: "tool", content: "sunny", tool_call_id: calls[0]!.id, name: "get_weather", is_error: false },
          { id: "r2", role: "tool", content: "12:00", tool_call_id: calls[1]!.id, name: "get_time", is_error: false },
        ]),
      ),
    );
    const model2 = requests[1]!.body.contents.filter((c: { role: string }) => c.role === "model");
    expect(model2[0].parts.map((p: { thoughtSignature?: string }) => p.thoughtSignature)).toEqual([undefined, "skip_thought_signature_validator", undefined]);
    expect(model2[1].parts.map((p: { thoughtSignature?: string }) => p.thoughtSignature)).toEqual(["c2lnLTE=", undefined]);
  });
});
