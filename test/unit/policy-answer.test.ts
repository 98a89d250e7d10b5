import { describe, expect, it } from "vitest";
import type { ApiPolicy } from "../../src/policy/document.js";
import { exchange, type ExchangeState, plainAnswer } from "../../src/policy/outbound.js";

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

describe("the answer a tool reads", () => {
  it("has its status, body and headers (without Set-Cookie), read or destructured", async () => {
    const res = await answerOf(upstream());
    const { status, headers, body } = res;
    expect(status).toBe(201);
    expect(body).toEqual({ ok: true });
    expect(headers).toEqual({ "content-type": "application/json", "x-id": "7" });
    expect(res.headers["set-cookie"]).toBeUndefined();
  });

  it("is JSON with status, body and headers in that order, as a tool's result and a stored answer are", async () => {
    const res = await answerOf(upstream());
    expect(JSON.stringify(res)).toBe('{"status":201,"body":{"ok":true},"headers":{"content-type":"application/json","x-id":"7"}}');
  });

  it("copies whole into plain data, which survives a structured clone (a store that clones what it keeps)", async () => {
    const plain = plainAnswer(await answerOf(upstream()));
    expect(Object.keys(plain)).toEqual(["status", "body", "headers"]);
    expect(structuredClone(plain)).toEqual({ status: 201, body: { ok: true }, headers: { "content-type": "application/json", "x-id": "7" } });
  });
});
