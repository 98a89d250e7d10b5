import { afterEach, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { chat, get, KEY, makeApp, post, readUntil, type TestApp } from "../helpers.js";

let app: TestApp;
let store: Store;
afterEach(async () => app?.close());

async function setup(env: Record<string, string> = {}) {
  store = createMemoryStore();
  app = await makeApp(env, { store });
}

const del = (id: string) => new Request(`http://test/threads/${id}`, { method: "DELETE", headers: { Authorization: `Bearer ${KEY}` } });

async function foreignThread(id: string) {
  const at = "2026-01-01T00:00:00.000+00:00";
  await store.createThread({ thread_id: id, owner: "someone-else", actor: null, created_at: at, updated_at: at });
}

describe("thread routes", () => {
  it("lists the caller's threads, most recent first, with paging", async () => {
    await setup();
    for (const id of ["t1", "t2", "t3"]) {
      await chat(app, { message: id, thread_id: id });
      await new Promise((r) => setTimeout(r, 5));
    }
    await foreignThread("not-mine");
    const all = (await (await app.fetch(get("/threads"))).json()) as { thread_id: string }[];
    expect(all.map((t) => t.thread_id)).toEqual(["t3", "t2", "t1"]);
    expect(Object.keys(all[0]!).sort()).toEqual(["created_at", "owner", "thread_id", "updated_at"]);
    const page = (await (await app.fetch(get("/threads?limit=1&offset=1"))).json()) as { thread_id: string }[];
    expect(page.map((t) => t.thread_id)).toEqual(["t2"]);
  });

  it("refuses scope=all without a read-across role", async () => {
    await setup();
    const res = await app.fetch(get("/threads?scope=all"));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toBeTruthy();
  });

  it("reads messages: 200 for the owner, 403 for another principal's thread, 404 unknown, 422 invalid id", async () => {
    await setup();
    await chat(app, { message: "hi", thread_id: "mine" });
    await foreignThread("theirs");
    expect((await app.fetch(get("/threads/mine/messages"))).status).toBe(200);
    const foreign = await app.fetch(get("/threads/theirs/messages"));
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toEqual({ detail: "This thread belongs to another principal." });
    expect((await app.fetch(get("/threads/nope/messages"))).status).toBe(404);
    expect((await app.fetch(get(`/threads/${"x".repeat(129)}/messages`))).status).toBe(422);
    expect((await app.fetch(get("/threads/bad%20id/messages"))).status).toBe(422);
  });

  it("pages messages: a small thread whole as before; a long one by limit, before and after, with Link headers to the next pages", async () => {
    await setup();
    await chat(app, { message: "hi", thread_id: "long" });
    const small = await app.fetch(get("/threads/long/messages"));
    expect(small.headers.get("link")).toBeNull();
    const opening = (await small.json()) as { id: string; role: string }[];
    expect(opening.map((m) => m.role)).toEqual(["user", "assistant"]);
    const at = "2026-01-02T00:00:00.000+00:00";
    const more = Array.from({ length: 2498 }, (_, i) => ({ id: `m${String(i).padStart(4, "0")}`, role: "user" as const, content: `n${i}` }));
    await store.appendMessages("long", more, at);
    const all = [...opening, ...more];
    const read = async (query: string) => {
      const res = await app.fetch(get(`/threads/long/messages${query}`));
      return { status: res.status, link: res.headers.get("link"), body: (await res.json()) as { id: string }[] };
    };
    const ids = (list: { id: string }[]) => list.map((m) => m.id);
    // Unpaged, a long thread answers its newest 1000, with a link to the older ones.
    const newest = await read("");
    expect(ids(newest.body)).toEqual(ids(all.slice(-1000)));
    expect(newest.link).toBe(`</threads/long/messages?before=${all.at(-1000)!.id}&limit=1000>; rel="prev"`);
    // Following the links walks the thread back to its start, and forward again.
    const back = await read(`?before=${all.at(-1000)!.id}&limit=1000`);
    expect(ids(back.body)).toEqual(ids(all.slice(-2000, -1000)));
    expect(back.link).toBe(`</threads/long/messages?before=${all.at(-2000)!.id}&limit=1000>; rel="prev", </threads/long/messages?after=${all.at(-1001)!.id}&limit=1000>; rel="next"`);
    const start = await read(`?before=${all.at(-2000)!.id}&limit=1000`);
    expect(ids(start.body)).toEqual(ids(all.slice(0, 500)));
    expect(start.link).toBe(`</threads/long/messages?after=${all[499]!.id}&limit=1000>; rel="next"`);
    const after = await read(`?after=${all[2]!.id}&limit=3`);
    expect(ids(after.body)).toEqual(ids(all.slice(3, 6)));
    expect(after.link).toContain(`before=${all[3]!.id}&limit=3>; rel="prev"`);
    expect(after.link).toContain(`after=${all[5]!.id}&limit=3>; rel="next"`);
    const end = await read(`?after=${all.at(-3)!.id}&limit=5`);
    expect(ids(end.body)).toEqual(ids(all.slice(-2)));
    expect(end.link).toBe(`</threads/long/messages?before=${all.at(-2)!.id}&limit=5>; rel="prev"`);
    expect(ids((await read("?limit=2")).body)).toEqual(ids(all.slice(-2)));
    // Bad paging is a 422 naming the field; a message of another thread is unknown here.
    await chat(app, { message: "elsewhere", thread_id: "other" });
    const otherId = ((await (await app.fetch(get("/threads/other/messages"))).json()) as { id: string }[])[0]!.id;
    for (const [query, field] of [
      ["?limit=0", "limit"],
      ["?limit=1001", "limit"],
      [`?before=${all[5]!.id}&after=${all[9]!.id}`, "after"],
      ["?before=no%20spaces", "before"],
      [`?before=${otherId}`, "before"],
      ["?after=unknown-id", "after"],
    ] as const) {
      const res = await read(query);
      expect(res.status, query).toBe(422);
      expect((res.body as unknown as { detail: { loc: string[] }[] }).detail.map((d) => d.loc.join(".")), query).toContain(`query.${field}`);
    }
  });

  it("refuses to continue another principal's thread with 403 (the id is taken)", async () => {
    await setup();
    await foreignThread("taken");
    const { res, json } = await chat(app, { message: "hi", thread_id: "taken" });
    expect(res.status).toBe(403);
    expect(json).toEqual({ detail: "This thread belongs to another principal." });
    expect(await store.getMessages("taken")).toEqual([]);
  });

  it("deletes: 204, then 404; 403 foreign; 422 invalid id; 409 while a run is in progress", async () => {
    await setup();
    const { events } = await chat(app, { message: "hi", thread_id: "gone" });
    const runId = events[0]!.data.run_id as string;
    const ok = await app.fetch(del("gone"));
    expect(ok.status).toBe(204);
    expect(await store.getThread("gone")).toBeNull();
    expect(await store.getRun(runId)).toBeNull();
    expect((await app.fetch(del("gone"))).status).toBe(404);
    await foreignThread("theirs");
    expect((await app.fetch(del("theirs"))).status).toBe(403);
    expect((await app.fetch(del("bad%20id"))).status).toBe(422);

    const res = await app.fetch(post("/chat", { message: "/sleep 2000\nwait", thread_id: "running" }));
    const { reader } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    const busy = await app.fetch(del("running"));
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { code: string }).code).toBe("thread_busy");
    await reader.cancel();
  });
});

describe("probes, metrics and request ids", () => {
  it("answers /health and /ready", async () => {
    await setup();
    expect(await (await app.fetch(new Request("http://test/health"))).json()).toEqual({ status: "ok", runtime: "standalone", checkpointer: "memory" });
    expect(await (await app.fetch(new Request("http://test/ready"))).json()).toEqual({ status: "ready" });
  });

  it("answers /ready 503 when the store does not answer", async () => {
    store = createMemoryStore();
    app = await makeApp({}, { store: { ...store, ping: () => Promise.reject(new Error("down")) } });
    const res = await app.fetch(new Request("http://test/ready"));
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: "not_ready" });
  });

  it("answers 404 for /metrics when METRICS_ENABLED is false", async () => {
    await setup({ METRICS_ENABLED: "false" });
    expect((await app.fetch(new Request("http://test/metrics"))).status).toBe(404);
  });

  it("labels metrics with route templates and `unmatched`, never ids or client input", async () => {
    await setup();
    await chat(app, { message: "hi", thread_id: "label-thread-id" });
    await app.fetch(get("/threads/label-thread-id/messages?secret-query=1"));
    await app.fetch(get("/no/such/route-with-input"));
    const text = await (await app.fetch(new Request("http://test/metrics"))).text();
    expect(text).toContain('http_requests_total{method="GET",route="/threads/{thread_id}/messages",status="200"} 1');
    expect(text).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).not.toContain("label-thread-id");
    expect(text).not.toContain("route-with-input");
    expect(text).not.toContain("secret-query");
    for (const name of ["agent_runs_total", "agent_active_runs", "agent_run_duration_seconds", "agent_tokens_total", "agent_database_up", "agent_approvals_total", "agent_token_exchanges_total", "agent_token_exchange_duration_seconds", "http_request_duration_seconds"])
      expect(text).toContain(`# TYPE ${name} `);
    expect(text).toMatch(/agent_tokens_total\{kind="input"\} [1-9]/);
  });

  it("echoes a valid X-Request-ID and replaces an invalid one", async () => {
    await setup();
    const echoed = await app.fetch(new Request("http://test/health", { headers: { "X-Request-ID": "abc.DEF_1:2-3" } }));
    expect(echoed.headers.get("x-request-id")).toBe("abc.DEF_1:2-3");
    const replaced = await app.fetch(new Request("http://test/health", { headers: { "X-Request-ID": "bad id!" } }));
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    const onError = await app.fetch(new Request("http://test/threads", { headers: { "X-Request-ID": "err-1" } }));
    expect(onError.status).toBe(401);
    expect(onError.headers.get("x-request-id")).toBe("err-1");
  });
});

describe("dev pages", () => {
  it("exist only under APP_ENV=dev", async () => {
    for (const env of [{}, { APP_ENV: "DEV" }, { APP_ENV: "development" }] as Record<string, string>[]) {
      await setup(env);
      for (const path of ["/playground", "/docs", "/openapi.json"])
        expect((await app.fetch(new Request(`http://test${path}`))).status, `${path} ${JSON.stringify(env)}`).toBe(404);
      await app.close();
    }
    await setup({ APP_ENV: "dev" });
    const page = await app.fetch(new Request("http://test/playground"));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(await page.text()).toContain("/chat");
    expect((await app.fetch(new Request("http://test/docs"))).status).toBe(200);
  });

  it("describes every route in OpenAPI 3.1 from the validating schemas", async () => {
    await setup({ APP_ENV: "dev", MAX_MESSAGE_CHARS: "1234" });
    const doc = (await (await app.fetch(new Request("http://test/openapi.json"))).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required: string[] } }> } }>>;
    };
    expect(doc.openapi).toBe("3.1.0");
    for (const [path, method] of <[string, string][]>[["/chat", "post"], ["/threads", "get"], ["/threads/{thread_id}/messages", "get"], ["/threads/{thread_id}", "delete"], ["/health", "get"], ["/ready", "get"], ["/metrics", "get"]])
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    const schema = doc.paths["/chat"]!.post!.requestBody!.content["application/json"]!.schema;
    expect(Object.keys(schema.properties).sort()).toEqual(["message", "metadata", "thread_id"]);
    expect(schema.required).toEqual(["message"]);
    expect(JSON.stringify(schema)).toContain("1234");
  });

  it("prefills the playground key only when the dev entry generated it", async () => {
    store = createMemoryStore();
    app = await makeApp({ APP_ENV: "dev" }, { playgroundKey: "dev-generated-key" });
    expect(await (await app.fetch(new Request("http://test/playground"))).text()).toContain("dev-generated-key");
    await app.close();
    app = await makeApp({}, { playgroundKey: "dev-generated-key" });
    expect((await app.fetch(new Request("http://test/playground"))).status).toBe(404);
  });
});
