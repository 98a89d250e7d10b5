// Child process for the idle-stream memory figures of scripts/bench-chat.mjs that are not the
// service's (not meant to be run by hand; the service's figure comes from its entries).
// `node scripts/bench-chat-idle.mjs bare|raw`, forked with an IPC channel: serves on 127.0.0.1
// (port 0), reports {type:"ready", port}, answers {type:"mem"} with its memory figures and exits
// on {type:"stop"} or when the parent goes away.
// - bare: the bare Hono streamSSE route (@hono/node-server), one event, then a cancellable wait.
// - raw: the floor: node:http alone, the request body read, one event written, a heartbeat every
//   2 s from one timer for all streams, nothing else kept per stream than node:http keeps.
import { createServer } from "node:http";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { parseCommandLine, usageError } from "./lib/args.mjs";

const USAGE = "usage: node scripts/bench-chat-idle.mjs bare|raw (forked by scripts/bench-chat.mjs with an IPC channel)\n";
const { positionals } = parseCommandLine(process.argv.slice(2), { name: "bench-chat-idle", usage: USAGE, positionals: true });
if (positionals.length !== 1 || !["bare", "raw"].includes(positionals[0])) usageError("bench-chat-idle", USAGE, "needs the mode: bare or raw");
const mode = positionals[0];
if (!process.send) {
  process.stderr.write("bench-chat-idle.mjs is started by scripts/bench-chat.mjs (needs an IPC channel)\n");
  process.exit(2);
}

/** A bare streamSSE route: one message.start event, then a cancellable 120 s wait. */
function bareIdleApp() {
  const app = new Hono();
  app.post("/chat", async (c) => {
    await c.req.json();
    const ids = { thread_id: crypto.randomUUID(), run_id: crypto.randomUUID() };
    return streamSSE(c, async (stream) => {
      await stream.writeSSE({ event: "message.start", data: JSON.stringify(ids) });
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 120_000);
        stream.onAbort(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    });
  });
  return { fetch: app.fetch, close: async () => {} };
}

/** node:http alone: the floor under any framework's waiting stream. */
function rawIdleServer() {
  const open = new Set();
  const beat = setInterval(() => {
    for (const res of open) res.write(": keep-alive\n\n");
  }, 2_000);
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      res.write(`event: message.start\ndata: ${JSON.stringify({ thread_id: crypto.randomUUID(), run_id: crypto.randomUUID() })}\n\n`);
      open.add(res);
      res.on("close", () => open.delete(res));
    });
  });
  server.on("close", () => clearInterval(beat));
  return server;
}

const app = mode === "bare" ? bareIdleApp() : { close: async () => {} };

const server =
  mode === "bare"
    ? serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
        process.send({ type: "ready", port: info.port, pid: process.pid });
      })
    : rawIdleServer().listen(0, "127.0.0.1", function () {
        process.send({ type: "ready", port: this.address().port, pid: process.pid });
      });
server.on("error", (error) => {
  process.send({ type: "error", message: String(error?.message ?? error) });
});

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  const force = setTimeout(() => process.exit(0), 5_000);
  force.unref();
  server.close();
  server.closeAllConnections?.();
  try {
    await app.close();
  } catch {
    // exiting anyway
  }
  process.exit(0);
}

process.on("message", (msg) => {
  if (msg?.type === "mem") {
    const before = process.memoryUsage();
    let after = before;
    if (typeof globalThis.gc === "function") {
      globalThis.gc();
      after = process.memoryUsage();
    }
    process.send({
      type: "mem",
      id: msg.id,
      rss: before.rss,
      heapUsed: before.heapUsed,
      rssAfterGc: after.rss,
      heapUsedAfterGc: after.heapUsed,
      gc: typeof globalThis.gc === "function",
    });
  } else if (msg?.type === "stop") {
    void stop();
  }
});
process.on("disconnect", () => void stop());
