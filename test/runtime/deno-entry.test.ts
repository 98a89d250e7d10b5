/**
 * The Deno entry serves and calls out as the Node entry does. Its server is serveNode over Deno's
 * node:http (src/runtime/node-serve.ts): event streams written straight to the response, and a
 * waiting stream's connection taken from node:http and given back after. These drive the built
 * entry over raw connections, where the framing and the connection's reuse show; the drain on
 * SIGTERM of a handed-over stream is in entries.test.ts, and test/runtime/node-serve.test.ts
 * covers the same on Node, in process. Its outbound fetch is the undici package's, so
 * `timeouts_ms.connect` bounds connecting.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOST, killSpawned, type ServiceProcess, startEntry, stopEntry } from "../support/service-process.js";
import { expectConnectTimeoutToFailTheCall } from "./connect-timeout.js";

const KEY = "k";
let svc: ServiceProcess;
let port = 0;

beforeAll(async () => {
  svc = await startEntry("deno", { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_FORMAT: "json", SSE_HEARTBEAT_S: "1" });
  port = Number(new URL(svc.base).port);
}, 30_000);

afterAll(async () => {
  if (svc) expect(await stopEntry(svc)).toBe(0);
  killSpawned();
});

/** A raw HTTP/1.1 client on one connection: all it read, and when the server closed it. */
function rawConnection(): { socket: Socket; text: () => string; closed: Promise<void> } {
  const socket = connect(port, HOST);
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => (text += d));
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return { socket, text: () => text, closed };
}

function rawChat(message: string, threadId: string): string {
  const body = JSON.stringify({ message, thread_id: threadId });
  return `POST /chat HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Each answer's text, in order, from a raw read. */
function rawAnswers(text: string): string[] {
  return [...text.matchAll(/data: \{"text":"([^"]*)"\}/g)].map((m) => m[1]!);
}

/** The body of the first chunked answer in a raw read, its chunks joined, and what follows its last chunk. */
function dechunk(text: string): { body: string; rest: string } {
  let at = text.indexOf("\r\n\r\n") + 4;
  let body = "";
  for (;;) {
    const lineEnd = text.indexOf("\r\n", at);
    const size = parseInt(text.slice(at, lineEnd), 16);
    if (Number.isNaN(size)) throw new Error(`not a chunk size at ${at}: ${JSON.stringify(text.slice(at, at + 20))}`);
    at = lineEnd + 2;
    if (size === 0) return { body, rest: text.slice(at + 2) };
    body += text.slice(at, at + size);
    at += size + 2;
  }
}

describe("deno entry: streams served over node:http", () => {
  it("frames a waiting stream's heartbeats and answer as chunks, then serves the client's next request on the same connection", async () => {
    const raw = rawConnection();
    raw.socket.write(rawChat("/sleep 1500\nfirst", "deno-1"));
    await expect.poll(() => raw.text().endsWith("\r\n0\r\n\r\n"), { timeout: 10_000 }).toBe(true);
    expect(raw.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(raw.text().toLowerCase()).toContain("transfer-encoding: chunked");
    const { body, rest } = dechunk(raw.text());
    expect(rest).toBe("");
    expect(body.split(": keep-alive").length - 1).toBeGreaterThanOrEqual(1);
    expect(body).toMatch(/^event: message\.start\n/);
    expect(body).toMatch(/event: message\.end\ndata: \{[^\n]*"status":"ok"[^\n]*\}\n\n$/);
    raw.socket.write(rawChat("second", "deno-2"));
    await expect.poll(() => rawAnswers(raw.text()), { timeout: 10_000 }).toEqual(["echo: first", "echo: second"]);
    expect(raw.socket.destroyed).toBe(false);
    raw.socket.destroy();
  });

  it("stops the run of a waiting stream whose client goes away: its thread takes a new chat at once", async () => {
    const raw = rawConnection();
    raw.socket.write(rawChat("/sleep 30000\nwait", "deno-3"));
    // Past its first heartbeat, the stream is well past the turn after its first words.
    await expect.poll(() => raw.text().includes(": keep-alive"), { timeout: 10_000 }).toBe(true);
    raw.socket.destroy();
    const again = async () => {
      const res = await fetch(`${svc.base}/chat`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ message: "again", thread_id: "deno-3" }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    // 409 thread_busy while the run would still wait; 200 once leaving stopped it.
    await expect.poll(again, { timeout: 5_000 }).toBe(200);
  });

  it("answers a request pipelined behind a waiting stream, after it, on the same connection", async () => {
    const raw = rawConnection();
    raw.socket.write(rawChat("/sleep 1200\nfirst", "deno-4") + rawChat("second", "deno-5"));
    await expect.poll(() => rawAnswers(raw.text()), { timeout: 10_000 }).toEqual(["echo: first", "echo: second"]);
    raw.socket.destroy();
  });
});

describe("deno entry: outbound calls", () => {
  it("a connection not made within timeouts_ms.connect fails the call at once, long before the read timeout", async () => {
    await expectConnectTimeoutToFailTheCall("deno");
  }, 30_000);
});
