import { describe, expect, it } from "vitest";
import type { ApiPolicy } from "../../src/policy/document.js";
import { exchange, type ExchangeState } from "../../src/policy/outbound.js";

/** The answer a tool gets from one exchange with an upstream that answers `response`. */
async function answerOf(response: Response) {
  const api = { name: "svc", timeouts: { connect: 1000, read: 1000 }, limits: {} } as unknown as ApiPolicy;
  const state: ExchangeState = { stopped: false, answer: undefined, status: 0 };
  const fetchFn = (async () => response) as unknown as typeof fetch;
  return exchange(fetchFn, { api, method: "GET", url: "http://127.0.0.1:9/x", headers: {}, body: undefined, operation: "x" }, state);
}

const upstream = () =>
  new Response(JSON.stringify({ ok: true }), {
    status: 201,
    headers: { "Content-Type": "application/json", "X-Id": "7", "Set-Cookie": "sid=secret" },
  });

const expected = { status: 201, body: { ok: true }, headers: { "content-type": "application/json", "x-id": "7" } };

describe("the answer a tool reads", () => {
  it("is plain data: status, body and headers (without Set-Cookie), however a tool reads, spreads or compares it", async () => {
    const res = await answerOf(upstream());
    expect(res).toEqual(expected);
    expect(Object.keys(res)).toEqual(["status", "body", "headers"]);
    expect({ ...res }).toEqual(expected);
    expect(res.headers["set-cookie"]).toBeUndefined();
  });

  it("is JSON with status, body and headers in that order, as a tool's result and a stored answer are", async () => {
    expect(JSON.stringify(await answerOf(upstream()))).toBe('{"status":201,"body":{"ok":true},"headers":{"content-type":"application/json","x-id":"7"}}');
  });

  it("survives a structured clone whole (a store that clones what it keeps)", async () => {
    expect(structuredClone(await answerOf(upstream()))).toEqual(expected);
  });
});

describe("the answer's body", () => {
  const bodyOf = async (contentType: string | undefined, text: string) => {
    const headers: Record<string, string> = contentType === undefined ? {} : { "content-type": contentType };
    return (await answerOf(new Response(text, { status: 200, headers }))).body;
  };

  it("is parsed as JSON when the content type names json as a word, in any case", async () => {
    for (const type of ["application/json", "Application/JSON; charset=utf-8", "application/problem+json", "application/vnd.api+json", "json", "text/x-json"])
      expect(await bodyOf(type, '{"a":1}'), type).toEqual({ a: 1 });
  });

  it("is text when json is not a word of the content type, or the JSON does not parse", async () => {
    for (const type of ["text/plain", "application/jsonl", "text/jsonish", "application/xjson", "application/json_seq", undefined])
      expect(await bodyOf(type, '{"a":1}'), String(type)).toBe('{"a":1}');
    expect(await bodyOf("application/json", "not json")).toBe("not json");
  });
});

