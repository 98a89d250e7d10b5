// Child process for the bare route's idle-stream memory figure of scripts/bench-chat.mjs (not meant
// to be run by hand; the service's figure comes from its entries). `node scripts/bench-chat-idle.mjs
// bare`, forked with an IPC channel: serves the bare route on 127.0.0.1 (port 0), reports {type:"ready", port}, answers {type:"mem"} with its memory
// figures and exits on {type:"stop"} or when the parent goes away.
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { parseCommandLine, usageError } from "./lib/args.mjs";

const USAGE = "usage: node scripts/bench-chat-idle.mjs bare (forked by scripts/bench-chat.mjs with an IPC channel)\n";
const { positionals } = parseCommandLine(process.argv.slice(2), { name: "bench-chat-idle", usage: USAGE, positionals: true });
if (positionals.length !== 1 || positionals[0] !== "bare") usageError("bench-chat-idle", USAGE, "needs the mode: bare");
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

const app = bareIdleApp();

const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
  process.send({ type: "ready", port: info.port, pid: process.pid });
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
