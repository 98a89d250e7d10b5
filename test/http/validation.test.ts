import { afterEach, describe, expect, it } from "vitest";
import { chat, get, KEY, makeApp, post, type TestApp } from "../helpers.js";

let app: TestApp;
afterEach(async () => app?.close());

type Issue = { type: string; loc: (string | number)[]; msg: string; ctx: Record<string, unknown> };

async function rejected(body: unknown, env: Record<string, string> = {}) {
  app ??= await makeApp(env);
  const res = await app.fetch(post("/chat", body));
  const text = await res.text();
  expect(res.status).toBe(422);
  const detail = (JSON.parse(text) as { detail: Issue[] }).detail;
  for (const issue of detail) {
    expect(Object.keys(issue).sort()).toEqual(["ctx", "loc", "msg", "type"]);
  }
  return { detail, text };
}

describe("POST /chat validation (422)", () => {
  afterEach(() => {
    (app as unknown) = undefined;
  });

  it("requires message", async () => {
    const { detail } = await rejected({});
    expect(detail).toContainEqual(expect.objectContaining({ type: "missing", loc: ["body", "message"] }));
  });

  it("rejects a non-string message without echoing it", async () => {
    const { detail, text } = await rejected({ message: 987654321 });
    expect(detail[0]).toMatchObject({ type: "string_type", loc: ["body", "message"] });
    expect(text).not.toContain("987654321");
  });

  it("rejects an empty message", async () => {
    const { detail } = await rejected({ message: "" });
    expect(detail[0]).toMatchObject({ type: "string_too_short", loc: ["body", "message"], ctx: { min_length: 1 } });
  });

  it("counts code points: 32000 emoji pass, 32001 fail without echo", async () => {
    app = await makeApp({ MODEL_PROVIDER: "fake" });
    const ok = await app.fetch(post("/chat", { message: "😀".repeat(32000) }));
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    const { detail, text } = await rejected({ message: "😀".repeat(32001) });
    expect(detail[0]).toMatchObject({ type: "string_too_long", loc: ["body", "message"], ctx: { max_length: 32000 } });
    expect(text).not.toContain("😀");
  });

  it("rejects lone surrogates as invalid Unicode", async () => {
    const { detail, text } = await rejected('{"message":"abc\\ud800secret"}');
    expect(detail[0]).toMatchObject({ type: "invalid_unicode", loc: ["body", "message"] });
    expect(text).not.toContain("secret");
  });

  it("rejects a body that is not UTF-8", async () => {
    app = await makeApp();
    const res = await app.fetch(
      new Request("http://test/chat", {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: new Uint8Array([0x7b, 0x22, 0x6d, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      }),
    );
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: Issue[] }).detail[0]!.type).toBe("invalid_unicode");
  });

  it("rejects malformed JSON without echoing it", async () => {
    const { detail, text } = await rejected('{"message": "hush-hush",');
    expect(detail[0]).toMatchObject({ type: "json_invalid", loc: ["body"] });
    expect(text).not.toContain("hush-hush");
  });

  it("rejects unknown fields", async () => {
    const { detail } = await rejected({ message: "hi", thread: "x" });
    expect(detail[0]).toMatchObject({ type: "extra_forbidden", loc: ["body", "thread"] });
  });

  it("rejects invalid thread ids without echoing them", async () => {
    const { detail, text } = await rejected({ message: "hi", thread_id: "bad id/../x" });
    expect(detail[0]).toMatchObject({ type: "string_pattern_mismatch", loc: ["body", "thread_id"] });
    expect(text).not.toContain("bad id");
    (app as unknown) = undefined;
    const long = await rejected({ message: "hi", thread_id: "a".repeat(129) });
    expect(long.detail[0]).toMatchObject({ type: "string_too_long", loc: ["body", "thread_id"] });
  });

  it("rejects nested metadata values", async () => {
    const { detail, text } = await rejected({ message: "hi", metadata: { k: { deep: "nested-secret" } } });
    expect(detail[0]).toMatchObject({ type: "metadata_value_type", loc: ["body", "metadata", "k"] });
    expect(text).not.toContain("nested-secret");
  });

  it("rejects a nested value whatever its key, __proto__ included", async () => {
    app = await makeApp();
    for (const key of ["__proto__", "constructor", "prototype"]) {
      const text = `{"message":"hi","metadata":{"${key}":{"deep":"nested-secret"}}}`;
      const res = await app.fetch(new Request("http://test/chat", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" }, body: text }));
      expect(res.status, key).toBe(422);
      const body = await res.text();
      expect(JSON.parse(body).detail[0]).toMatchObject({ type: "metadata_value_type", loc: ["body", "metadata", key] });
      expect(body).not.toContain("nested-secret");
    }
  });

  it("caps metadata keys", async () => {
    const metadata = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i]));
    const { detail } = await rejected({ message: "hi", metadata });
    expect(detail[0]).toMatchObject({ type: "too_many_keys", loc: ["body", "metadata"], ctx: { max_keys: 16 } });
  });

  it("caps metadata string values and keys", async () => {
    const { detail, text } = await rejected({ message: "hi", metadata: { k: "v".repeat(257) } });
    expect(detail[0]).toMatchObject({ type: "string_too_long", loc: ["body", "metadata", "k"], ctx: { max_length: 256 } });
    expect(text).not.toContain("vvvv");
    (app as unknown) = undefined;
    const longKey = "K".repeat(257);
    const keyed = await rejected({ message: "hi", metadata: { [longKey]: 1 } });
    expect(keyed.detail[0]).toMatchObject({ type: "key_too_long", loc: ["body", "metadata"] });
    expect(keyed.text).not.toContain(longKey);
  });

  it("rejects metadata that is not an object", async () => {
    const { detail } = await rejected({ message: "hi", metadata: ["a"] });
    expect(detail[0]!.loc).toEqual(["body", "metadata"]);
  });

  it("accepts flat metadata and keeps it in the run record only", async () => {
    app = await makeApp();
    const { events } = await chat(app, { message: "hi", metadata: { source: "test", n: 1, ok: true, none: null } });
    expect(events.at(-1)!.event).toBe("message.end");
  });

  it("rejects a body that is not an object", async () => {
    const { detail } = await rejected("[1,2]");
    expect(detail[0]!.loc).toEqual(["body"]);
  });

  it("answers 413 above MAX_REQUEST_BYTES, by declared length or by streamed length", async () => {
    app = await makeApp({ MAX_REQUEST_BYTES: "64" });
    const declared = await app.fetch(post("/chat", { message: "x".repeat(100) }));
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ detail: "Request body exceeds MAX_REQUEST_BYTES (64 bytes)." });
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode("x".repeat(20)));
        c.close();
      },
    });
    const streamed = await app.fetch(
      new Request("http://test/chat", { method: "POST", headers: { Authorization: `Bearer ${KEY}` }, body, duplex: "half" } as RequestInit),
    );
    expect(streamed.status).toBe(413);
  });
});

describe("query and path validation", () => {
  it("validates /threads paging without echoing values", async () => {
    app = await makeApp();
    for (const [q, type] of [
      ["limit=0", "greater_than_equal"],
      ["limit=101", "less_than_equal"],
      ["offset=-1", "greater_than_equal"],
      ["limit=zzz-input", "number_type"],
      ["scope=everything", "enum"],
    ] as const) {
      const res = await app.fetch(get(`/threads?${q}`));
      expect(res.status, q).toBe(422);
      const text = await res.text();
      expect((JSON.parse(text) as { detail: Issue[] }).detail[0]!.type, q).toBe(type);
      expect(text).not.toContain("zzz-input");
      expect(text).not.toContain("everything");
    }
  });
});

describe("metric labels never copy client input", () => {
  it("an unknown HTTP method is counted as `other`", async () => {
    const a = await makeApp();
    try {
      for (const method of ["PROPFIND", "BREW", "X-SECRET-METHOD"]) await (await a.fetch(new Request("http://test/health", { method }))).text();
      const text = await (await a.fetch(new Request("http://test/metrics"))).text();
      expect(text).toMatch(/http_requests_total\{method="other",route="unmatched",status="404"\} 3/);
      expect(text).not.toMatch(/PROPFIND|BREW|SECRET/);
    } finally {
      await a.close();
    }
  });
});
