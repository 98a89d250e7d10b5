/**
 * How the Node entry serves (src/runtime/node-serve.ts): the app's event streams written straight
 * to node:http, everything else through @hono/node-server. Over real HTTP on loopback: a chat, a
 * heartbeat, a client that goes away (its run is cancelled), refusals and probes as before; and,
 * at the seam, a stream handed over as a source with no web stream behind it.
 */
import type { Server } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, defineTool } from "../../src/runtime/package.js";
import { directStreamsFetch, serveNode } from "../../src/runtime/node-serve.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { answerText, parseSse } from "../helpers.js";

const KEY = "k";
const ENV = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "ERROR" };
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function served(
  env: Record<string, string> = {},
  tools: NonNullable<Parameters<typeof createApp>[0]>["tools"] = undefined,
  store: Store = createMemoryStore(),
): Promise<{ base: string; store: Store; server: Server; port: number }> {
  const app = await createApp({
    env: { ...ENV, ...env },
    logWrite: () => {},
    storage: async (_s, { clock }) => ({ store, lease: createMemoryLease(clock) }),
    ...(tools ? { tools } : {}),
  });
  const { server, port } = await serveNode({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 });
  open.push({ close: () => app.close() }, { close: () => closeServer(server) });
  return { base: `http://127.0.0.1:${port}`, store, server, port };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

const chat = (base: string, message: string, init: RequestInit = {}) =>
  fetch(`${base}/chat`, { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "X-Request-ID": "req-1" }, body: JSON.stringify({ message, thread_id: "t1" }), ...init });

/** The heartbeats a stream brings within `ms` (what it says meanwhile is read and dropped). */
async function heartbeatsWithin(res: Response, ms: number): Promise<number> {
  const reader = res.body!.getReader();
  let text = "";
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), until - Date.now()))]);
    if (next === null || next.done) break;
    text += new TextDecoder().decode(next.value);
  }
  return text.split(": keep-alive").length - 1;
}

describe("serveNode", () => {
  it("streams a chat with the stream's headers, the request id and every event", async () => {
    const { base } = await served();
    const res = await chat(base, '/call calculator {"expression":"6*7"}');
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(res.headers.get("x-request-id")).toBe("req-1");
    const events = parseSse(await res.text());
    expect(events.map((e) => e.event)).toEqual(["message.start", "tool.call", "tool.result", ...events.slice(3, -1).map(() => "message.delta"), "message.end"]);
    expect(answerText(events)).toBe("done: 42");
  });

  it("sends an answer ready in its first turn whole, with its length and no chunked framing; one that waits goes in chunks", async () => {
    const { port } = await served({ SSE_HEARTBEAT_S: "1" });
    const raw = rawConnection(port);
    raw.socket.write(rawChat("quick", "w1"));
    await expect.poll(() => rawAnswers(raw.text()), { timeout: 5_000 }).toEqual(["echo: quick"]);
    const [head = "", body = ""] = raw.text().split("\r\n\r\n", 2);
    expect(`${head.toLowerCase()}\r\n`).toContain(`\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`);
    expect(head.toLowerCase()).not.toContain("transfer-encoding");
    expect(head.toLowerCase()).toContain("content-type: text/event-stream; charset=utf-8");
    expect(parseSse(body).map((e) => e.event)).toEqual(["message.start", "message.delta", "message.end"]);
    // The next one on the connection waits first: its headers and first words go out at once, in chunks.
    const before = raw.text().length;
    raw.socket.write(rawChat("/sleep 300\nlater", "w2"));
    await expect.poll(() => raw.text().endsWith("\r\n0\r\n\r\n"), { timeout: 5_000 }).toBe(true);
    expect(rawAnswers(raw.text())).toEqual(["echo: quick", "echo: later"]);
    const second = raw.text().slice(before).toLowerCase();
    expect(second).toContain("transfer-encoding: chunked");
    expect(second).not.toContain("content-length");
    raw.socket.destroy();
  });

  it("sends heartbeats on an idle stream, and cancels the run when the client goes away", async () => {
    const { base, store } = await served({ SSE_HEARTBEAT_S: "1" });
    const aborter = new AbortController();
    const res = await chat(base, "/sleep 30000\nwait", { signal: aborter.signal });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes(": keep-alive\n\n")) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toMatch(/^event: message.start\n[^]*: keep-alive\n\n/);
    aborter.abort();
    await expect.poll(async () => (await store.listRuns("t1"))[0]?.status, { timeout: 5_000 }).toBe("cancelled");
  });

  it("starts no heartbeat for a stream that ends in its first turn; one that waits gets its heartbeats", async () => {
    const { base } = await served({ SSE_HEARTBEAT_S: "1" });
    // The heartbeats' one timer for the process ticks every 50 ms (HEARTBEAT_TICK_MS) while a stream beats.
    const intervals = vi.spyOn(globalThis, "setInterval");
    const ticks = () => intervals.mock.calls.filter((call) => call[1] === 50).length;
    try {
      for (let i = 0; i < 3; i++) {
        const res = await chat(base, `quick ${i}`);
        expect(answerText(parseSse(await res.text()))).toBe(`echo: quick ${i}`);
      }
      expect(ticks()).toBe(0);
      const res = await fetch(`${base}/chat`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ message: "/sleep 1500\nwait", thread_id: "t2" }),
      });
      const text = await res.text();
      expect(text).toMatch(/^event: message.start\n[^]*: keep-alive\n\n[^]*event: message.end\n/);
      expect(ticks()).toBe(1);
    } finally {
      intervals.mockRestore();
    }
  });

  it("cancels the run of a client that went away while the run was being started (a slow claim of the thread)", async () => {
    const store = createMemoryStore();
    const claim = store.claimThread.bind(store);
    store.claimThread = async (...args) => {
      await new Promise((r) => setTimeout(r, 400));
      return claim(...args);
    };
    const { base } = await served({}, undefined, store);
    const aborter = new AbortController();
    const gone = chat(base, "/sleep 30000\nwait", { signal: aborter.signal }).catch(() => "aborted");
    setTimeout(() => aborter.abort(), 100);
    expect(await gone).toBe("aborted");
    // Not a run nobody reads going on for 30 s with the thread held: it stops, and the thread is free.
    await expect.poll(async () => (await store.listRuns("t1"))[0]?.status, { timeout: 5_000 }).toBe("cancelled");
    // The thread is free again (a 409 only while the cancelled run lets it go).
    let next = await chat(base, "hello again");
    for (let i = 0; i < 20 && next.status === 409; i++) {
      await new Promise((r) => setTimeout(r, 100));
      next = await chat(base, "hello again");
    }
    expect(next.status).toBe(200);
    expect(answerText(parseSse(await next.text()))).toBe("echo: hello again");
  });

  it("keeps each stream's heartbeat period when streams of different periods wait in one process", async () => {
    const fast = await served({ SSE_HEARTBEAT_S: "1" });
    const slow = await served({ SSE_HEARTBEAT_S: "3" });
    const aborter = new AbortController();
    // The slow stream opens first, so it heads the process's streams while the fast one waits.
    const slowRes = await chat(slow.base, "/sleep 30000\nwait", { signal: aborter.signal });
    const fastRes = await chat(fast.base, "/sleep 30000\nwait", { signal: aborter.signal });
    const [fastBeats, slowBeats] = await Promise.all([heartbeatsWithin(fastRes, 3_500), heartbeatsWithin(slowRes, 2_500)]);
    aborter.abort();
    expect(fastBeats).toBeGreaterThanOrEqual(3);
    expect(slowBeats).toBe(0);
  });

  it("keeps beating every stream still open when others end, and none while a stream writes", async () => {
    // The streams wait in buckets by the tick they are next due; one that ends leaves its bucket
    // and the bucket's last stream takes its place: a slip there would silence a stream still open.
    const nap = defineTool({ name: "nap", description: "waits 300 ms", parameters: { type: "object", properties: {} }, calls: [], run: () => new Promise((r) => setTimeout(() => r("rested"), 300)) });
    const { base } = await served({ SSE_HEARTBEAT_S: "1" }, [nap]);
    const aborters = Array.from({ length: 24 }, () => new AbortController());
    const opened = await Promise.all(
      aborters.map((a, i) =>
        fetch(`${base}/chat`, {
          method: "POST",
          headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
          body: JSON.stringify({ message: "/sleep 30000\nwait", thread_id: `beat-${i}` }),
          signal: a.signal,
        }),
      ),
    );
    // Every other stream ends (its client goes away), in an order unlike the one they opened in.
    for (let i = aborters.length - 2; i >= 0; i -= 2) aborters[i]!.abort();
    // A stream whose run writes every 300 ms (a tool call and its result, turn after turn) gets no heartbeat meanwhile.
    const naps = Array.from({ length: 12 }, () => "/call nap {}").join("\n/step\n");
    const writing = await fetch(`${base}/chat`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ message: naps, thread_id: "beat-writing" }),
    });
    const counts = await Promise.all([...opened.filter((_, i) => i % 2 === 1).map((res) => heartbeatsWithin(res, 2_600)), heartbeatsWithin(writing, 2_600)]);
    for (const a of aborters) a.abort();
    expect(counts.slice(0, -1).every((n) => n >= 2), String(counts)).toBe(true);
    expect(counts.at(-1)).toBe(0);
  });

  it("answers refusals and probes as before", async () => {
    const { base } = await served();
    const bad = await fetch(`${base}/chat`, { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" }, body: "{}" });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: unknown[] }).detail.length).toBeGreaterThan(0);
    const none = await fetch(`${base}/chat`, { method: "POST", body: "{}" });
    expect(none.status).toBe(401);
    expect((await fetch(`${base}/health`)).status).toBe(200);
  });

  it("reads a request head past node:http's 16 KiB default: a long bearer token is the auth policy's to refuse (401), not a bare 431", async () => {
    const { base } = await served();
    for (const n of [16_300, 16_384, 17_000]) {
      const res = await fetch(`${base}/threads`, { headers: { Authorization: `Bearer ${"a".repeat(n)}` } });
      expect(res.status, String(n)).toBe(401);
      expect(res.headers.get("www-authenticate"), String(n)).toMatch(/^Bearer/);
      expect(((await res.json()) as { detail: string }).detail).toEqual(expect.any(String));
    }
    // A known key beside 20 KB of other headers is served.
    const ok = await fetch(`${base}/threads`, { headers: { Authorization: `Bearer ${KEY}`, "X-Padding": "p".repeat(20_000) } });
    expect(ok.status).toBe(200);
  });

  it("hands a stream over as a source: no body on the response, the text written to the socket's response", async () => {
    const app = await createApp({ env: ENV, logWrite: () => {} });
    open.push({ close: () => app.close() });
    const { outgoing, written } = fakeOutgoing();
    const request = new Request("http://x/chat", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" }, body: JSON.stringify({ message: "hello" }) });
    const response = await directStreamsFetch(app.fetch)(request, { outgoing } as never);
    expect(response.headers.get("x-hono-already-sent")).toBe("true");
    expect(outgoing.statusCode).toBe(200);
    expect(outgoing.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    await expect.poll(() => outgoing.writableEnded).toBe(true);
    expect(answerText(parseSse(written.join("")))).toBe("echo: hello");
    // The same app answers a caller without a runtime of its own with a web stream, as before.
    const plain = await app.fetch(new Request(request.url, { method: "POST", headers: request.headers, body: JSON.stringify({ message: "again" }) }));
    expect(plain.body).toBeInstanceOf(ReadableStream);
    expect(answerText(parseSse(await plain.text()))).toBe("echo: again");
  });
});

describe("serveNode: when the answers go out", () => {
  it("writes a run's last words in the stream's turn of the loop, not from the microtasks of the read that brought its request", async () => {
    // Every answer finished while the requests of one read were handled goes out in one pass
    // after it (setImmediate), back to back, rather than each from the middle of that read:
    // a client's side is then woken once for the lot instead of once an answer.
    const app = await createApp({ env: ENV, logWrite: () => {} });
    open.push({ close: () => app.close() });
    const { outgoing, calls, written } = fakeOutgoing();
    const request = new Request("http://x/chat", { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" }, body: JSON.stringify({ message: "hello" }) });
    await directStreamsFetch(app.fetch)(request, { outgoing } as never);
    // The fake model answers at once: the run is over within this turn's microtasks.
    for (let i = 0; i < 200; i++) await Promise.resolve();
    expect(calls).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(["end"]);
    expect(answerText(parseSse(written.join("")))).toBe("echo: hello");
  });
});

/** What directStreamsFetch is given as node:http's response at the seam: what it was told, in order. */
function fakeOutgoing() {
  const written: string[] = [];
  const calls: ("write" | "end")[] = [];
  const outgoing = {
    headers: {} as Record<string, string>,
    statusCode: 0,
    setHeader(name: string, value: string) {
      this.headers[name] = value;
    },
    headersSent: false,
    writableEnded: false,
    flushHeaders() {},
    write(text: string) {
      calls.push("write");
      written.push(text);
    },
    end(text: string) {
      calls.push("end");
      written.push(text);
      this.writableEnded = true;
    },
    on: () => {},
  };
  return { outgoing, written, calls };
}

/** The server's side of each connection, once each (a connection handed back is announced again). */
function serverSockets(server: Server): { sockets: Set<Socket>; announced: () => number } {
  const sockets = new Set<Socket>();
  let announced = 0;
  server.on("connection", (socket: Socket) => {
    announced++;
    sockets.add(socket);
  });
  return { sockets, announced: () => announced };
}

/** Waits until the server's one connection is taken from node:http (its parser freed). */
async function handedOver(sockets: Set<Socket>): Promise<void> {
  await expect.poll(() => [...sockets].map((s) => (s as { parser?: unknown }).parser ?? null)).toEqual([null]);
}

/** A served app (heartbeat 1 s), and a raw connection whose chat is handed over by the time this returns. */
async function rawHandedOver(message: string, threadId: string) {
  const { port, server } = await served({ SSE_HEARTBEAT_S: "1" });
  const { sockets, announced } = serverSockets(server);
  const raw = rawConnection(port);
  raw.socket.write(rawChat(message, threadId));
  await handedOver(sockets);
  return { raw, server, sockets, announced };
}

/** A raw HTTP/1.1 client on one connection: what it wrote, and all it read until the server closed it. */
function rawConnection(port: number): { socket: Socket; text: () => string; closed: Promise<void> } {
  const socket = connect(port, "127.0.0.1");
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => (text += d));
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return { socket, text: () => text, closed };
}

function rawChat(message: string, threadId: string, extraHeaders = ""): string {
  const body = JSON.stringify({ message, thread_id: threadId });
  return `POST /chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n${extraHeaders}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The SSE answers in a raw HTTP/1.1 read, chunked framing and all: each answer's text, in order. */
function rawAnswers(text: string): string[] {
  return [...text.matchAll(/data: \{"text":"([^"]*)"\}/g)].map((m) => m[1]!);
}

describe("serveNode: a waiting stream handed over from node:http", () => {
  it("lets node:http free its state for a waiting stream; heartbeats and the answer still come, framed right", async () => {
    const { base, server } = await served({ SSE_HEARTBEAT_S: "1" });
    const { sockets } = serverSockets(server);
    const res = await chat(base, "/sleep 1800\nwait");
    expect(res.status).toBe(200);
    // Taken from node:http a turn after its first event: its parser is gone from the connection.
    await handedOver(sockets);
    // fetch reads the chunked body whole: the heartbeats (every 1 s of the 1.8 s wait) and the answer.
    const text = await res.text();
    expect(text.split(": keep-alive").length - 1).toBeGreaterThanOrEqual(1);
    const events = parseSse(text);
    expect(events.map((e) => e.event)).toEqual(["message.start", "message.delta", "message.end"]);
    expect(answerText(events)).toBe("echo: wait");
  });

  it("gives the connection back to the server after a handed-over stream: the client's next request goes on it", async () => {
    const { raw, sockets, announced } = await rawHandedOver("/sleep 1200\nfirst", "r1");
    await expect.poll(() => raw.text().endsWith("\r\n0\r\n\r\n"), { timeout: 5_000 }).toBe(true);
    raw.socket.write(rawChat("second", "r2"));
    await expect.poll(() => rawAnswers(raw.text()), { timeout: 5_000 }).toEqual(["echo: first", "echo: second"]);
    // One connection, announced to node:http twice (as new, and when it came back).
    expect(sockets.size).toBe(1);
    expect(announced()).toBe(2);
    expect(raw.socket.destroyed).toBe(false);
    raw.socket.destroy();
  });

  it("sends heartbeats on a handed-over stream, and stops the run when its client goes away", async () => {
    const { base, store, server } = await served({ SSE_HEARTBEAT_S: "1" });
    const { sockets } = serverSockets(server);
    const aborter = new AbortController();
    const res = await chat(base, "/sleep 30000\nwait", { signal: aborter.signal });
    await handedOver(sockets);
    const [stream] = [...sockets];
    expect(await heartbeatsWithin(res, 2_300)).toBeGreaterThanOrEqual(2);
    aborter.abort();
    await expect.poll(async () => (await store.listRuns("t1"))[0]?.status, { timeout: 5_000 }).toBe("cancelled");
    // Its connection closed (fetch may open another one to the server meanwhile: not this one).
    await expect.poll(() => stream!.destroyed).toBe(true);
  });

  it("keeps a stream on node:http when a request is pipelined behind it: both are answered, in order", async () => {
    const { port } = await served({ SSE_HEARTBEAT_S: "1" });
    const raw = rawConnection(port);
    raw.socket.write(rawChat("/sleep 1200\nfirst", "p1") + rawChat("second", "p2"));
    await expect.poll(() => rawAnswers(raw.text()), { timeout: 5_000 }).toEqual(["echo: first", "echo: second"]);
    // The waiting one ended with the last chunk, the one that answered at once went out whole
    // with its length, on a connection still open.
    expect(raw.text().match(/\r\n0\r\n\r\n/g)).toHaveLength(1);
    expect(raw.text().toLowerCase().match(/\r\ncontent-length: \d+\r\n/g)).toHaveLength(1);
    expect(raw.socket.destroyed).toBe(false);
    raw.socket.destroy();
  });

  it("bounds a connection given back after a handed-over stream by the keep-alive timeout, as after any answer: a request begun within it is served whole, then the idle connection closes", async () => {
    const { raw, server } = await rawHandedOver("/sleep 600\nfirst", "k1");
    server.keepAliveTimeout = 300;
    await expect.poll(() => raw.text().endsWith("\r\n0\r\n\r\n"), { timeout: 5_000 }).toBe(true);
    // A request begun within the timeout is served whole, though its body comes later than the
    // timeout and its run waits longer than it.
    const next = rawChat("/sleep 800\nsecond", "k2");
    const head = next.indexOf("\r\n\r\n") + 4;
    raw.socket.write(next.slice(0, head));
    await new Promise((r) => setTimeout(r, 600));
    raw.socket.write(next.slice(head));
    await expect.poll(() => rawAnswers(raw.text()), { timeout: 5_000 }).toEqual(["echo: first", "echo: second"]);
    const answered = Date.now();
    await raw.closed;
    // Then idle: closed after the keep-alive timeout. node:http would have left a connection it
    // took as new open for its headers timeout (60 s and more).
    expect(Date.now() - answered).toBeLessThan(3_000);
  });

  it("closes a handed-over connection after its stream when the client sent more meanwhile; the stream's answer is whole", async () => {
    const { raw } = await rawHandedOver("/sleep 1200\nfirst", "q1");
    // A request sent while the first stream is handed over has nowhere to go: dropped, and the
    // connection closes once the first stream ends (the client asks again on a new one).
    raw.socket.write(rawChat("second", "q2"));
    await raw.closed;
    expect(rawAnswers(raw.text())).toEqual(["echo: first"]);
    expect(raw.text()).toMatch(/\r\n0\r\n\r\n$/);
  });

  it("closes the connection after a handed-over stream whose client asked for Connection: close, as node:http said it would", async () => {
    const { port, server } = await served({ SSE_HEARTBEAT_S: "1" });
    const { sockets } = serverSockets(server);
    const raw = rawConnection(port);
    raw.socket.write(rawChat("/sleep 600\nlast", "cc1", "Connection: close\r\n"));
    await handedOver(sockets);
    await expect.poll(() => raw.text().endsWith("\r\n0\r\n\r\n"), { timeout: 5_000 }).toBe(true);
    const answered = Date.now();
    await raw.closed;
    // At once, not after the keep-alive timeout (5 s) of a connection given back.
    expect(Date.now() - answered).toBeLessThan(2_000);
    expect(raw.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*connection: close\r\n/i);
    expect(rawAnswers(raw.text())).toEqual(["echo: last"]);
  });

  it("closes handed-over streams with the server's closeAllConnections", async () => {
    const { raw, server } = await rawHandedOver("/sleep 30000\nwait", "c1");
    server.closeAllConnections();
    await raw.closed;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
