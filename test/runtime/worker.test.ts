/**
 * The built module worker (dist/worker.js, from src/runtime/worker.ts) running in workerd via
 * Miniflare: no nodejs_compat, bindings read as the environment. `npm test` builds dist first.
 */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerText, parseSse } from "../helpers.js";

// Must not be newer than the installed workerd supports (node_modules/workerd 1.20260426.x);
// keep in step with wrangler.toml.
const COMPATIBILITY_DATE = "2026-04-01";
const KEY = "k";

/** The built worker in workerd with the fake model, the key and `bindings`. */
async function startWorker(bindings: Record<string, string> = {}): Promise<Miniflare> {
  const worker = new Miniflare({
    modules: true,
    scriptPath: "dist/worker.js",
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: [],
    bindings: { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", ...bindings },
  });
  await worker.ready;
  return worker;
}

let mf: Miniflare;

beforeAll(async () => {
  mf = await startWorker();
});

afterAll(async () => {
  await mf?.dispose();
});

describe("module worker in workerd", () => {
  it("GET /health answers 200 with status ok", async () => {
    const res = await mf.dispatchFetch("http://localhost/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { status: string };
    expect(body.status).toBe("ok");
  });

  it("POST /chat streams echo: hello as SSE", async () => {
    const res = await mf.dispatchFetch("http://localhost/chat", {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ message: "hello" }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = parseSse(text);
    expect(events[0]?.event).toBe("message.start");
    expect(answerText(events)).toBe("echo: hello");
    const end = events.at(-1)!;
    expect(end.event).toBe("message.end");
    expect(end.data.status).toBe("ok");
  });

  it("the agent card names the origin the request came to when APP_URL is unset", async () => {
    for (const origin of ["http://agents.example:8787", "https://other.example"]) {
      const res = await mf.dispatchFetch(`${origin}/a2a/app/.well-known/agent-card.json`, { headers: { Authorization: `Bearer ${KEY}` } });
      expect(res.status).toBe(200);
      const card = (await res.json()) as { supportedInterfaces: { url: string }[] };
      expect(card.supportedInterfaces.map((i) => i.url)).toEqual([`${origin}/a2a/app`, `${origin}/a2a/app`]);
    }
  });

  it("POST /chat without the key answers 401", async () => {
    const res = await mf.dispatchFetch("http://localhost/chat", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ message: "hello" }),
    });
    expect(res.status).toBe(401);
    await res.arrayBuffer();
  });
});

describe("the agent card in workerd with APP_URL", () => {
  let withUrl: Miniflare;
  beforeAll(async () => {
    withUrl = await startWorker({ APP_URL: "https://agents.example/base/" });
  });
  afterAll(async () => {
    await withUrl?.dispose();
  });

  it("names APP_URL, whatever origin the request came to", async () => {
    const res = await withUrl.dispatchFetch("http://localhost:8787/a2a/app/.well-known/agent-card.json", { headers: { Authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    const card = (await res.json()) as { supportedInterfaces: { url: string }[] };
    expect(card.supportedInterfaces[0]!.url).toBe("https://agents.example/base/a2a/app");
  });
});

describe("structured answers in workerd", () => {
  let structured: Miniflare;
  const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };

  beforeAll(async () => {
    structured = await startWorker({ RESPONSE_SCHEMA: JSON.stringify(schema) });
  });
  afterAll(async () => {
    await structured?.dispose();
  });

  const ask = async (message: string) => {
    const res = await structured.dispatchFetch("http://localhost/chat", {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ message }),
    });
    return parseSse(await res.text());
  };

  it("streams only the fitting try, checked without code generation", async () => {
    const events = await ask('/json {"city": 3}\n/json {"city":"Lyon"}');
    expect(events.filter((e) => e.event === "message.delta").map((e) => e.data.text)).toEqual(['{"city":"Lyon"}']);
    expect(events.at(-1)!.data.structured_response).toEqual({ city: "Lyon" });
  });

  it("ends with invalid_structured_response after three wrong tries", async () => {
    const events = await ask('/json {"city": 1}\n/json {}\n/json []');
    expect(events.at(-1)).toMatchObject({ event: "error", data: { code: "invalid_structured_response" } });
  });
});

describe("AUTH_POLICY=jwt in workerd", () => {
  it("verifies tokens against a loopback JWK set: concurrent first requests all succeed, later ones reuse the keys", async () => {
    const { Issuer, makeKey, mint, ISS, AUD } = await import("../http/jwt-fixtures.js");
    const issuer = new Issuer();
    await issuer.start();
    const key = await makeKey("ES256", "w1");
    issuer.reset([key.jwk]);
    issuer.delayMs = 100; // concurrent first requests all wait on the key set
    const worker = await startWorker({ AUTH_POLICY: "jwt", AUTH_JWT_JWKS_URL: issuer.url, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD });
    try {
      const tokens = await Promise.all(Array.from({ length: 6 }, (_, i) => mint({ sub: `w-user-${i}` }, key)));
      const first = await Promise.all(tokens.map((t) => worker.dispatchFetch("http://localhost/threads", { headers: { Authorization: `Bearer ${t}` } })));
      expect(first.map((r) => r.status)).toEqual(Array(6).fill(200));
      const fetched = issuer.count;
      expect(fetched).toBeGreaterThanOrEqual(1);
      const later = await Promise.all(tokens.map((t) => worker.dispatchFetch("http://localhost/threads", { headers: { Authorization: `Bearer ${t}` } })));
      expect(later.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(issuer.count).toBe(fetched);
      const bad = await worker.dispatchFetch("http://localhost/threads", { headers: { Authorization: "Bearer not.a.token" } });
      expect(bad.status).toBe(401);
    } finally {
      await worker.dispose();
      await issuer.stop();
    }
  });
});
