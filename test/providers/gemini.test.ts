/**
 * The Gemini provider (REST over fetch, no SDK) against a loopback server that speaks
 * streamGenerateContent with `alt=sse`.
 */
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import type { ModelEvent, ModelRequest, ProviderOptions } from "../../src/agent/model.js";
import { createGeminiModel } from "../../src/agent/providers/gemini.js";
import { hasCode } from "../../src/errors.js";
import type { Message } from "../../src/store/ports.js";
import { abortAtFirstEvent, collect, conversation, failure, loopbackUpstream, request as baseRequest, sse, sseLate, sseOpen, timeTool, weatherTool } from "./support.js";

const API_KEY = "AIza-loopback-test-key";

// Nothing but the loopback server is ever asked, and never with the key in the URL.
const upstream = loopbackUpstream({ checkUrl: (url) => expect(url).not.toContain(API_KEY) });
const { requests, fetchedUrls } = upstream;

function model(overrides: Partial<ProviderOptions> = {}) {
  return createGeminiModel({ model: "gemini-2.5-flash", apiKey: API_KEY, baseURL: upstream.baseURL, maxRetries: 0, fetch: upstream.fetch, ...overrides });
}

const weatherParams = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { city: { type: "string" } }, additionalProperties: false };

function request(messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return baseRequest(messages, { tools: [{ ...weatherTool, parameters: weatherParams }, timeTool], ...extra });
}

function failWith(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-type": "application/json", "retry-after": "0" });
  res.end(JSON.stringify({ error: { code: status, message: "secret-body-text from the upstream", status: "UNAVAILABLE" } }));
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

describe("gemini provider", () => {
  it("streams text in several chunks, then the last usage, with the key in x-goog-api-key", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["Hel", "lo, ", "world"]));
    const m = model();
    expect(m.provider).toBe("gemini");
    expect(m.name).toBe("gemini-2.5-flash");
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
    expect(r.path).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    expect(r.headers["x-goog-api-key"]).toBe(API_KEY);
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

  it("sends history: model turns with functionCall parts, grouped functionResponse parts", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["Sunny; the clock failed."]));
    const history: Message[] = [
      user,
      assistantCalls,
      ...results,
      { id: "m5", role: "user", content: "And tomorrow?" },
      { id: "m6", role: "assistant", content: "" },
      { id: "m7", role: "assistant", content: "No idea." },
    ];
    const events = await collect(model().stream(request(history)));
    expect(events[0]).toEqual({ type: "text", text: "Sunny; the clock failed." });
    expect(requests[0]!.body.contents).toEqual([
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
    ]);
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

  it("omits tools and the system instruction when there are none", async () => {
    upstream.handler = (_r, res) => sse(res, textFrames(["ok"]));
    await collect(model().stream(request([user], { tools: [], system: "" })));
    expect(requests[0]!.body).not.toHaveProperty("tools");
    expect(requests[0]!.body).not.toHaveProperty("systemInstruction");
  });

  it("retries a 429 and a 500, then succeeds on the third attempt", async () => {
    upstream.handler = (_r, res, attempt) => (attempt === 1 ? failWith(res, 429) : attempt === 2 ? failWith(res, 500) : sse(res, textFrames(["fine"])));
    const events = await collect(model({ maxRetries: 2 }).stream(request([user])));
    expect(requests).toHaveLength(3);
    expect(events[0]).toEqual({ type: "text", text: "fine" });
    for (const r of requests) expect(r.headers["x-goog-api-key"]).toBe(API_KEY);
  });

  it("gives up with ModelError after maxRetries + 1 attempts, without the body in the message", async () => {
    upstream.handler = (_r, res, attempt) => failWith(res, attempt === 1 ? 429 : 503);
    const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
    expect(requests).toHaveLength(3);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("gemini request failed: status 503");
    expect(error.message).not.toContain("secret-body-text");
  });

  it("does not retry a 400", async () => {
    upstream.handler = (_r, res) => failWith(res, 400);
    const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
    expect(requests).toHaveLength(1);
    expect(error.message).toBe("gemini request failed: status 400");
  });

  it("retries a refused connection, then names it", async () => {
    const error = await failure(collect(model({ baseURL: "http://127.0.0.1:1", maxRetries: 1 }).stream(request([user]))));
    expect(fetchedUrls).toHaveLength(2);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("gemini request failed: connection error");
  });

  it("turns a request past the timeout into ModelError", async () => {
    upstream.handler = (_r, res) => sseLate(res, 1500, () => textFrames(["late"]));
    const started = Date.now();
    const error = await failure(collect(model({ timeoutMs: 200 }).stream(request([user]))));
    expect(Date.now() - started).toBeLessThan(1400);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("gemini request failed: timeout");
  });

  it("times out a stream that stalls between chunks", async () => {
    // The rest never comes.
    upstream.handler = (_r, res) => sseOpen(res, [chunk([{ text: "first" }])]);
    const events: ModelEvent[] = [];
    const error = await failure(
      (async () => {
        for await (const e of model({ timeoutMs: 200 }).stream(request([user]))) events.push(e);
      })(),
    );
    expect(events).toEqual([{ type: "text", text: "first" }]);
    expect(hasCode(error, "model_error")).toBe(true);
    expect(error.message).toBe("gemini request failed: timeout");
    expect(requests).toHaveLength(1);
  });

  it("turns an error chunk and a malformed chunk into ModelError", async () => {
    upstream.handler = (_r, res) => sse(res, [chunk([{ text: "a" }]), `data: ${JSON.stringify({ error: { code: 500, message: "secret-body-text" } })}\n\n`]);
    const error = await failure(collect(model().stream(request([user]))));
    expect(error.message).toBe("gemini request failed: error in stream");

    upstream.handler = (_r, res) => sse(res, ["data: {not json\n\n"]);
    const malformed = await failure(collect(model().stream(request([user]))));
    expect(hasCode(malformed, "model_error")).toBe(true);
    expect(malformed.message).toBe("gemini request failed: malformed response");
  });

  it("rethrows the signal's reason when the run is aborted mid-stream", async () => {
    const controller = new AbortController();
    upstream.handler = (_r, res) => sseOpen(res, [chunk([{ text: "first" }])]);
    const reason = new Error("run cancelled");
    const { events, error } = await abortAtFirstEvent(model().stream(request([user], { signal: controller.signal })), controller, reason);
    expect(events).toEqual([{ type: "text", text: "first" }]);
    expect(error).toBe(reason);
  });

  it("rethrows the signal's reason during a retry backoff", async () => {
    const controller = new AbortController();
    const reason = new Error("run cancelled");
    upstream.handler = (_r, res) => {
      res.writeHead(503, { "retry-after": "2" });
      res.end();
      setTimeout(() => controller.abort(reason), 50);
    };
    const started = Date.now();
    const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user], { signal: controller.signal }))));
    expect(error).toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(requests).toHaveLength(1);
  });

  it("defaults to Google's endpoint without a baseURL (refused by the loopback-only transport)", async () => {
    const error = await failure(collect(model({ baseURL: undefined }).stream(request([user]))));
    expect(hasCode(error, "model_error")).toBe(true);
    expect(fetchedUrls).toEqual(["https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"]);
    fetchedUrls.length = 0; // refused before anything was sent
  });
});
