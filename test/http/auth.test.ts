import { afterEach, describe, expect, it } from "vitest";
import { get, KEY, makeApp, post, type TestApp } from "../helpers.js";

let app: TestApp;
afterEach(async () => app?.close());

describe("shared-bearer auth", () => {
  it("answers 401 without a credential, with WWW-Authenticate: Bearer and no error code", async () => {
    app = await makeApp();
    const res = await app.fetch(new Request("http://test/threads"));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(await res.json()).toEqual({ detail: "Missing or invalid bearer token." });
  });

  it("answers 401 invalid_token for a wrong key, never echoing it", async () => {
    app = await makeApp();
    const res = await app.fetch(get("/threads", { Authorization: "Bearer wrong-key-123" }));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ detail: "Missing or invalid bearer token." });
    expect(text).not.toContain("wrong-key-123");
  });

  it("treats a non-bearer scheme as a missing credential", async () => {
    app = await makeApp();
    const res = await app.fetch(get("/threads", { Authorization: `Basic ${KEY}` }));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("answers 503 on every guarded route when API_KEY is unset, never no-auth", async () => {
    app = await makeApp({ API_KEY: "" });
    for (const req of [get("/threads"), post("/chat", { message: "hi" }), new Request("http://test/threads")]) {
      const res = await app.fetch(req);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { detail: string; error_id: string };
      expect(body.detail).toMatch(/API_KEY/);
      expect(body.error_id).toMatch(/^[0-9a-f]{16}$/);
    }
    // One warning at startup says why, before any request shows it.
    expect(app.logs.filter((l) => l.level === "WARNING" && /API_KEY is not set/.test(String(l.message)))).toHaveLength(1);
  });

  it("authenticates before reading the body: an oversized unauthenticated body is a 401", async () => {
    app = await makeApp({ MAX_REQUEST_BYTES: "100" });
    const res = await app.fetch(
      new Request("http://test/chat", { method: "POST", body: "x".repeat(10_000), headers: { "Content-Type": "application/json" } }),
    );
    expect(res.status).toBe(401);
  });

  it("leaves probes unguarded", async () => {
    app = await makeApp();
    expect((await app.fetch(new Request("http://test/health"))).status).toBe(200);
    expect((await app.fetch(new Request("http://test/ready"))).status).toBe(200);
    expect((await app.fetch(new Request("http://test/metrics"))).status).toBe(200);
  });

  it("guards /metrics with METRICS_TOKEN only", async () => {
    app = await makeApp({ METRICS_TOKEN: "metrics-secret" });
    const none = await app.fetch(new Request("http://test/metrics"));
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    const apiKey = await app.fetch(get("/metrics"));
    expect(apiKey.status).toBe(401);
    expect(apiKey.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    const ok = await app.fetch(new Request("http://test/metrics", { headers: { Authorization: "Bearer metrics-secret" } }));
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it("answers 503 for an auth policy this release cannot serve", async () => {
    app = await makeApp({ AUTH_POLICY: "custom" });
    expect((await app.fetch(get("/threads"))).status).toBe(503);
  });
});
