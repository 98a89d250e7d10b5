/**
 * The built module worker (dist/worker.js, from src/runtime/worker.ts) running in workerd via
 * Miniflare with wrangler.toml's flags (nodejs_compat, which only PostgreSQL on workerd uses),
 * bindings read as the environment, the Durable Objects of wrangler.toml for threads and the
 * thread lease. `npm test` builds dist first.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerText, parseSse, readRest, readUntil } from "../helpers.js";
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS, DURABLE_OBJECTS, startWorkerd } from "../support/workerd.js";

const KEY = "k";
const FAKE = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake" };

/** The built worker in workerd with the fake model, the key and `bindings`. */
function startWorker(bindings: Record<string, string> = {}, options: Record<string, unknown> = {}): Promise<Miniflare> {
  return startWorkerd("dist/worker.js", { bindings: { ...FAKE, ...bindings }, ...options });
}

let mf: Miniflare;

beforeAll(async () => {
  mf = await startWorker();
});

afterAll(async () => {
  await mf?.dispose();
});

describe("module worker in workerd", () => {
  it("GET /health answers 200 with status ok, naming the Durable Objects as where state lives", async () => {
    const res = await mf.dispatchFetch("http://localhost/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ status: "ok", runtime: "standalone", checkpointer: "durable-object" });
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

describe("workerd: state in the Durable Objects, shared by isolates", () => {
  let two: Miniflare;
  const worker = (name: string, objects: Record<string, unknown>) => ({
    name,
    modules: true,
    scriptPath: "dist/worker.js",
    modulesRoot: "dist",
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: COMPATIBILITY_FLAGS,
    bindings: FAKE,
    durableObjects: objects,
  });

  beforeAll(async () => {
    // Two workers are two isolates; the second binds the first one's Durable Object classes.
    const borrowed = Object.fromEntries(Object.entries(DURABLE_OBJECTS).map(([binding, o]) => [binding, { ...o, scriptName: "a" }]));
    two = new Miniflare({ workers: [worker("a", DURABLE_OBJECTS), worker("b", borrowed)], handleRuntimeStdio: (out: NodeJS.ReadableStream) => void out.resume() });
    await two.ready;
  });
  afterAll(async () => {
    await two?.dispose();
  });

  const send = async (name: "a" | "b", path: string, body?: unknown) =>
    (await two.getWorker(name)).fetch(`http://localhost${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }) as unknown as Promise<Response>;

  it("two chats racing on one thread from two isolates: one runs, the other gets 409 thread_busy", async () => {
    for (let round = 0; round < 3; round++) {
      const thread_id = `race-${round}-${Date.now()}`;
      const [ra, rb] = await Promise.all([send("a", "/chat", { message: "/sleep 500\nfrom a", thread_id }), send("b", "/chat", { message: "/sleep 500\nfrom b", thread_id })]);
      const [won, lost] = ra.status === 200 ? [ra, rb] : [rb, ra];
      expect([ra.status, rb.status].sort()).toEqual([200, 409]);
      expect(await lost.json()).toMatchObject({ code: "thread_busy" });
      expect(parseSse(await won.text()).at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    }
  });

  it("a run going on in one isolate keeps the thread busy in the other; what one wrote the other reads", async () => {
    const thread_id = `busy-${Date.now()}`;
    const first = await send("a", "/chat", { message: "/sleep 1000\nslow", thread_id });
    expect(first.status).toBe(200);
    const { reader, text: head } = await readUntil(first, (events) => events.some((e) => e.event === "message.start"));
    const busy = await send("b", "/chat", { message: "meanwhile", thread_id });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ code: "thread_busy" });
    expect(answerText(parseSse(await readRest(reader, head)))).toBe("echo: slow");

    const second = await send("b", "/chat", { message: "after", thread_id });
    expect(answerText(parseSse(await second.text()))).toBe("echo: after");
    const messages = (await (await send("a", `/threads/${thread_id}/messages`)).json()) as { role: string; content: string }[];
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "/sleep 1000\nslow"],
      ["assistant", "echo: slow"],
      ["user", "after"],
      ["assistant", "echo: after"],
    ]);
  });
});

describe("workerd: threads outlive the worker", () => {
  it("a thread written before a restart is there after it (Durable Object storage on disk)", async () => {
    const persist = mkdtempSync(join(tmpdir(), "workerd-state-"));
    const thread_id = `kept-${Date.now()}`;
    const first = await startWorker({}, { durableObjectsPersist: persist });
    try {
      const res = await first.dispatchFetch("http://localhost/chat", {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ message: "remember me", thread_id }),
      });
      expect(answerText(parseSse(await res.text()))).toBe("echo: remember me");
    } finally {
      await first.dispose();
    }
    const second = await startWorker({}, { durableObjectsPersist: persist });
    try {
      const res = await second.dispatchFetch(`http://localhost/threads/${thread_id}/messages`, { headers: { Authorization: `Bearer ${KEY}` } });
      expect(res.status).toBe(200);
      const messages = (await res.json()) as { content: string }[];
      expect(messages.map((m) => m.content)).toEqual(["remember me", "echo: remember me"]);
    } finally {
      await second.dispose();
    }
  });
});

describe("workerd: the cron trigger runs the background jobs", () => {
  it("drops A2A tasks past A2A_TASK_TTL_S at the next firing", async () => {
    const cron = await startWorker({ A2A_TASK_TTL_S: "1" }, { unsafeTriggerHandlers: true });
    try {
      const rpc = async (method: string, params: unknown) => {
        const res = await cron.dispatchFetch("http://localhost/a2a/app", {
          method: "POST",
          headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        });
        return (await res.json()) as { result?: { task?: { id: string }; id?: string }; error?: { code: number } };
      };
      const sent = await rpc("SendMessage", { message: { messageId: `m-${Date.now()}`, role: "ROLE_USER", parts: [{ text: "hi" }] } });
      const id = sent.result!.task!.id;
      expect((await rpc("GetTask", { id })).result?.id).toBe(id);
      await new Promise((r) => setTimeout(r, 1500));
      // Not swept without a firing (that the worker starts no timer at all: worker-timers.test.ts).
      expect((await rpc("GetTask", { id })).result?.id).toBe(id);
      const fired = await cron.dispatchFetch("http://localhost/cdn-cgi/handler/scheduled?cron=*+*+*+*+*");
      expect(fired.status).toBe(200);
      await fired.arrayBuffer();
      expect((await rpc("GetTask", { id })).error).toBeDefined();
    } finally {
      await cron.dispose();
    }
  });
});

describe("workerd: a worker that cannot start", () => {
  /** The worker with `bindings`, and everything it writes to its log (stdout and stderr). */
  async function withLog(bindings: Record<string, string>): Promise<{ worker: Miniflare; log: () => string }> {
    let out = "";
    const worker = await startWorker(bindings, {
      handleRuntimeStdio(stdout: NodeJS.ReadableStream, stderr: NodeJS.ReadableStream) {
        for (const stream of [stdout, stderr]) stream.on("data", (chunk: Buffer) => (out += chunk.toString()));
      },
    });
    return { worker, log: () => out };
  }
  const health = (worker: Miniflare) => worker.dispatchFetch("http://localhost/health").then(async (r) => ({ status: r.status, body: (await r.json()) as { detail: string } }));

  it("answers 500 naming every bad binding, a RESPONSE_SCHEMA that is not JSON among them, and logs them once", async () => {
    const { worker, log } = await withLog({ LOG_LEVEL: "LOUD", RECURSION_LIMIT: "x", RESPONSE_SCHEMA: "{not json" });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await health(worker);
        expect(res.status).toBe(500);
        expect(res.body.detail).toMatch(/^Invalid settings: LOG_LEVEL .+; RECURSION_LIMIT .+; RESPONSE_SCHEMA is not JSON\.$/);
        expect(res.body.detail).not.toContain("LOUD");
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(log()).toContain("The service cannot start: invalid settings.\n  LOG_LEVEL: ");
      expect(log()).toContain("\n  RESPONSE_SCHEMA: is not JSON");
      expect(log().split("The service cannot start").length - 1).toBe(1);
    } finally {
      await worker.dispose();
    }
  });

  it("answers 500 by kind only when the API policy has problems; its log names their places", async () => {
    const policy = "apis:\n  billing:\n    base_url_env: BILLING_URL\n    auth: sometimes\n    allowed_methods: [GET]\n";
    const { worker, log } = await withLog({ API_POLICY: policy });
    try {
      const res = await health(worker);
      expect(res.status).toBe(500);
      expect(res.body.detail).toBe("The service failed to start: the API policy has problems; the worker's log names them.");
      await new Promise((r) => setTimeout(r, 200));
      expect(log()).toContain("The service cannot start: the API policy has problems.\n  apis.billing.auth: ");
    } finally {
      await worker.dispose();
    }
  });
});
