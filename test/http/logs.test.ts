import { afterEach, describe, expect, it } from "vitest";
import { defineTool } from "../../src/index.js";
import { chat, get, KEY, makeApp, type TestApp } from "../helpers.js";
import { loopbackUpstream, sse } from "../providers/support.js";

let app: TestApp;
afterEach(async () => app?.close());

describe("logs", () => {
  it("are JSON lines with the fields of 6.3 and never carry tokens, message text, tool arguments or query strings", async () => {
    const echo = defineTool({ name: "echo_args", description: "echo", parameters: { type: "object" }, calls: [], run: (a) => a });
    app = await makeApp({}, { tools: [echo] });
    await chat(app, { message: "private words xyzzy\n/call echo_args {\"arg\":\"tool-arg-plugh\"}", metadata: { meta: "meta-frotz" } }, { "X-Request-ID": "req-42" });
    await app.fetch(get("/threads?limit=5&secretparam=quux-value"));
    await app.fetch(get("/threads", { Authorization: "Bearer wrong-token-grue" }));

    const raw = app.rawLogs.join("\n");
    for (const secret of [KEY, "wrong-token-grue", "xyzzy", "tool-arg-plugh", "meta-frotz", "quux-value", "secretparam"])
      expect(raw, secret).not.toContain(secret);

    const logs = app.logs;
    expect(logs.length).toBeGreaterThan(0);
    for (const line of logs) {
      expect(typeof line.ts).toBe("string");
      expect(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]).toContain(line.level);
      expect(typeof line.logger).toBe("string");
      expect(typeof line.message).toBe("string");
      expect(line).toHaveProperty("request_id");
    }
    const end = logs.find((l) => l.message === "run ended")!;
    expect(end).toMatchObject({ request_id: "req-42", status: "ok" });
    expect(end.run_id).toBeTruthy();
    expect(end.thread_id).toBeTruthy();
    expect(end.principal_hash).toMatch(/^[0-9a-f]{32}$/);
    expect(typeof end.latency_ms).toBe("number");
    const access = logs.filter((l) => l.message === "request");
    expect(access.some((l) => l.path === "/threads" && l.status === 200)).toBe(true);
  });

  it("honours LOG_LEVEL", async () => {
    app = await makeApp({ LOG_LEVEL: "WARNING" });
    await chat(app, { message: "hi" });
    expect(app.logs.filter((l) => l.level === "INFO")).toEqual([]);
  });

  it("hashes principals with HMAC when PRINCIPAL_HASH_SALT is set", async () => {
    app = await makeApp();
    await chat(app, { message: "hi" });
    const plain = app.logs.find((l) => l.message === "run ended")!.principal_hash;
    await app.close();
    app = await makeApp({ PRINCIPAL_HASH_SALT: "pepper" });
    await chat(app, { message: "hi" });
    const salted = app.logs.find((l) => l.message === "run ended")!.principal_hash;
    expect(salted).toMatch(/^[0-9a-f]{32}$/);
    expect(salted).not.toBe(plain);
  });
});

describe("unexpected errors outside dev", () => {
  it("log the message and its cause under the error id, secrets masked, and the answer names only the reference", async () => {
    const failing = {
      provider: "test",
      name: "failing",
      structuredOutput: false,
      // eslint-disable-next-line require-yield
      async *stream(): AsyncGenerator<never> {
        const cause = Object.assign(new Error("connect ECONNREFUSED https://svc:hunter2@models.internal/v1?api_key=sk-live-abcdef123456"), { name: "FetchError" });
        throw new Error("provider said 401: invalid key Bearer tok-zzz-999 for model x", { cause });
      },
    };
    app = await makeApp({}, { model: failing as never });
    const { events } = await chat(app, { message: "hello" });
    const error = events.at(-1)!;
    expect(error).toMatchObject({ event: "error", data: { code: "run_failed" } });
    expect(JSON.stringify(error.data)).not.toContain("provider said");
    const line = app.logs.find((l) => l.message === "run failed")!;
    expect(line).toMatchObject({ level: "ERROR", error_id: error.data.error_id, error_type: "Error" });
    expect(line.detail).toBe("Error: provider said 401: invalid key Bearer <redacted> for model x");
    expect(line.cause).toBe("FetchError: connect ECONNREFUSED https://svc:<redacted>@models.internal/v1?api_key=<redacted>");
    for (const secret of ["hunter2", "tok-zzz-999", "sk-live-abcdef123456"]) expect(app.rawLogs.join("\n")).not.toContain(secret);
  });
});

describe("a model provider's error text (it may quote the request)", () => {
  const provider = loopbackUpstream({ basePath: "/v1" });
  const env = (level: string) => ({ MODEL_PROVIDER: "openai-compatible", MODEL_NAME: "m", MODEL_API_KEY: "k", OPENAI_BASE_URL: provider.baseURL, MODEL_MAX_RETRIES: "0", LOG_LEVEL: level });
  const WORDS = "my private words xyzzy";

  it("is told by its type, status and codes on the run's ERROR line, and only a DEBUG line holds its text", async () => {
    // A 400 that echoes the request, then an error in the stream that quotes the user's words.
    provider.handler = (req, res, n) => {
      if (n % 2 === 1) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `Bad request, you sent: ${JSON.stringify(req.body)}`, type: "invalid_request_error", code: "bad_input" } }));
      } else sse(res, [`data: ${JSON.stringify({ error: { message: `content flagged: ${WORDS}`, type: "content_filter" } })}\n\n`]);
    };
    for (const level of ["INFO", "DEBUG"]) {
      app = await makeApp(env(level));
      for (const _ of [1, 2]) {
        const { events } = await chat(app, { message: WORDS });
        expect(events.at(-1)).toMatchObject({ event: "error", data: { code: "run_failed" } });
      }
      const failed = app.logs.filter((l) => l.message === "run failed");
      expect(failed.map((l) => [l.level, l.detail, l.cause])).toEqual([
        ["ERROR", "ModelError: openai-compatible request failed: status 400", "BadRequestError (status 400, code bad_input, type invalid_request_error)"],
        ["ERROR", "ModelError: openai-compatible request failed: error in stream", "APIError (type content_filter)"],
      ]);
      const debug = app.logs.filter((l) => l.message === "run failed: the model provider's error");
      if (level === "INFO") {
        expect(debug).toEqual([]);
        expect(app.rawLogs.join("\n")).not.toContain("xyzzy");
      } else {
        // DEBUG may hold content (spec 6.3): the provider's text, under the same error id.
        expect(debug.map((l) => [l.level, l.error_id])).toEqual(failed.map((l) => ["DEBUG", l.error_id]));
        expect(String(debug[1]!.cause)).toContain(`content flagged: ${WORDS}`);
      }
      await app.close();
    }
  });
});
