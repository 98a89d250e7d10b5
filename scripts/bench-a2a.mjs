// Benchmark of A2A 1.0 JSON-RPC: the service against the @a2a-js/sdk reference server, on 127.0.0.1.
//
//   npx tsup --silent && node scripts/bench-a2a.mjs [--seconds 10] [--connections 50] [--warmup 1]
//
// 1. The service (dist/index.js, fake model, memory store) served in this process by
//    @hono/node-server at /a2a/app. Each request is a hand-built 1.0 `SendMessage` (then
//    `SendStreamingMessage`) starting a new task on a new context; the fake model answers
//    "echo: " + the text, streamed in pieces of at most 16 characters.
// 3. An ask round trip: a second service (agent A) whose fake model calls ask_b, which asks the
//    service of 1 (B) with SendMessage through A's policy client; A's /chat beside a direct
//    SendMessage to B, measured in the same run.
// 2. The SDK's own server: DefaultRequestHandler + InMemoryTaskStore + an echo AgentExecutor that
//    publishes the same shape of work (task, one artifact chunk per 16 characters, the last one
//    lastChunk, completed), bound to node:http with a tiny adapter around its
//    JsonRpcTransportHandler (the SDK's only HTTP binding is Express, which is not installed).
//    The adapter does what the SDK's Express `jsonRpcHandler` does: read the JSON body, build the
//    call context, check the version against the card, answer JSON or SSE.
// autocannon runs in a worker thread (workers: 1), so the load generator does not share the
// servers' event loop. Every response is checked once (shape) before the timed runs.
import http from "node:http";
import { serve } from "@hono/node-server";
import autocannon from "autocannon";
import { Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, validateVersion } from "@a2a-js/sdk/server";
import { createApp } from "../dist/index.js";
import { benchOptions } from "./lib/bench.mjs";

// ---------------------------------------------------------------------------------------------
// options

function options(argv) {
  const opts = benchOptions(argv, {
    name: "bench-a2a",
    usage: "usage: node scripts/bench-a2a.mjs [--seconds 10] [--connections 50] [--warmup 1]\n",
    numbers: { seconds: 10, connections: 50, warmup: 1 },
  });
  opts.connections = Math.max(1, Math.floor(opts.connections));
  return opts;
}
const opts = options(process.argv.slice(2));
const budgetMs = (opts.warmup + opts.seconds) * 4 * 1000 + 3 * 60 * 1000;
setTimeout(() => {
  process.stderr.write(`bench-a2a: gave up after ${Math.round(budgetMs / 1000)} s\n`);
  process.exit(1);
}, budgetMs).unref();
const log = (line) => process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------
// workload: "echo: " + TEXT is 18 pieces of 16 characters

const PIECES = 18;
const TEXT = "The quick brown fox jumps over the lazy dog. ".repeat(7).slice(0, 16 * PIECES - "echo: ".length);
const KEY = "bench";
const HEADERS = { authorization: `Bearer ${KEY}`, "content-type": "application/json", "a2a-version": "1.0" };
const body = (method) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { message: { messageId: "m-1", role: "ROLE_USER", parts: [{ text: TEXT }] } } });
const SERVICE_ENV = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "WARNING", RUN_TIMEOUT_S: "600", A2A_TASK_TTL_S: "3600" };

// ---------------------------------------------------------------------------------------------
// the reference: the SDK's request handler with an echo executor, on node:http

class EchoExecutor {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = `echo: ${ctx.userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("")}`;
    if (!ctx.task) bus.publish(AgentEvent.task(Task.fromJSON({ id: taskId, contextId, status: { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() }, history: [] })));
    const artifactId = `${taskId}-response`;
    const n = Math.ceil(text.length / 16);
    for (let i = 0; i < n; i++) {
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({
            taskId,
            contextId,
            artifact: { artifactId, name: "response", parts: [{ text: text.slice(i * 16, i * 16 + 16) }] },
            append: i > 0,
            lastChunk: i === n - 1,
          }),
        ),
      );
    }
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId, status: { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() } })));
    bus.finished();
  }
  async cancelTask(taskId, bus) {
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId: "", status: { state: "TASK_STATE_CANCELED" } })));
    bus.finished();
  }
}

function referenceServer() {
  const card = {
    name: "echo",
    description: "echo agent",
    version: "0.1.0",
    supportedInterfaces: [{ url: "http://127.0.0.1/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "chat", name: "chat", description: "echo", tags: ["chat"] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
  const transport = new JsonRpcTransportHandler(handler);
  return http.createServer(async (req, res) => {
    // Same guard as the service: a bearer key.
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.writeHead(401).end();
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    let parsed;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Invalid JSON payload." } }));
      return;
    }
    const context = new ServerCallContext({ requestedVersion: req.headers["a2a-version"] || undefined, state: new Map([["headers", req.headers]]) });
    try {
      validateVersion(context.requestedVersion, await handler.getAgentCard(), "JSONRPC");
      const out = await transport.handle(parsed, context);
      if (typeof out?.[Symbol.asyncIterator] === "function") {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        for await (const event of out) res.write(`data: ${JSON.stringify(event)}\n\n`);
        res.end();
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
      }
    } catch (error) {
      const e = JsonRpcTransportHandler.mapToJSONRPCError(error);
      if (!res.headersSent) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: parsed?.id ?? null, error: e }));
      else res.end();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// helpers

function listenHono(fetch) {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve({ server, port: info.port }));
    server.once("error", reject);
  });
}
function listenNode(server) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve({ server, port: server.address().port }));
  });
}
function closeServer(server) {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}

/** One request, its answer checked: a completed task whose answer is the echo. */
async function check(url, method) {
  const res = await fetch(url, { method: "POST", headers: HEADERS, body: body(method) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url} ${method}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  const want = `echo: ${TEXT}`;
  if (method === "SendMessage") {
    const task = JSON.parse(text).result?.task;
    const got = task?.artifacts?.[0]?.parts?.map((p) => p.text).join("");
    if (task?.status?.state !== "TASK_STATE_COMPLETED" || got !== want) throw new Error(`${url} ${method}: unexpected answer ${text.slice(0, 3000)}`);
    return 1;
  }
  const events = text.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => JSON.parse(f.slice(6)));
  const chunks = events.filter((e) => e.result?.artifactUpdate).map((e) => e.result.artifactUpdate);
  const last = events.at(-1)?.result?.statusUpdate?.status?.state;
  if (chunks.map((c) => c.artifact.parts[0].text).join("") !== want || !chunks.at(-1)?.lastChunk || last !== "TASK_STATE_COMPLETED")
    throw new Error(`${url} ${method}: unexpected stream ${text.slice(0, 300)}`);
  return events.length;
}

function cannon(url, method, seconds) {
  return autocannon({ url, method: "POST", headers: HEADERS, body: body(method), connections: opts.connections, duration: seconds, workers: 1 });
}

async function measure(url, method) {
  if (opts.warmup > 0) await cannon(url, method, opts.warmup);
  const r = await cannon(url, method, opts.seconds);
  const bad = r.non2xx + r.errors + r.timeouts;
  return { rps: r.requests.average, total: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, bad };
}

// ---------------------------------------------------------------------------------------------
// run

const app = await createApp({ env: SERVICE_ENV, logWrite: () => {} });
const svc = await listenHono((req) => app.fetch(req));
const ref = await listenNode(referenceServer());
const svcUrl = `http://127.0.0.1:${svc.port}/a2a/app`;
const refUrl = `http://127.0.0.1:${ref.port}/a2a`;

log(`bench-a2a: A2A 1.0, ${opts.connections} connections, ${opts.seconds} s per run (+${opts.warmup} s warm-up), autocannon in a worker thread`);
log(`answer: ${PIECES} pieces of 16 characters ("echo: " + ${TEXT.length} characters)`);

const rows = [];
for (const method of ["SendMessage", "SendStreamingMessage"]) {
  const evSvc = await check(svcUrl, method);
  const evRef = await check(refUrl, method);
  if (method === "SendStreamingMessage") log(`SSE events per stream: service ${evSvc}, reference ${evRef}`);
  const s = await measure(svcUrl, method);
  const r = await measure(refUrl, method);
  rows.push({ method, s, r });
  log(
    `${method.padEnd(21)} service ${s.rps.toFixed(0).padStart(6)} req/s (p50 ${s.p50} ms, p99 ${s.p99} ms, bad ${s.bad})` +
      ` | SDK reference ${r.rps.toFixed(0).padStart(6)} req/s (p50 ${r.p50} ms, p99 ${r.p99} ms, bad ${r.bad})` +
      ` | ratio ${(s.rps / r.rps).toFixed(2)} (target >= 1.0) ${s.rps / r.rps >= 1 ? "ok" : "BELOW TARGET"}`,
  );
}

// ---------------------------------------------------------------------------------------------
// an ask round trip: agent A's /chat, whose model calls ask_b, which sends SendMessage to the
// service above (B) through A's policy client; beside the direct SendMessage to B, same run.

const A_POLICY = `
apis:
  b:
    protocol: a2a
    a2a: { path: /a2a/app }
    base_url_env: B_URL
    auth: bearer
    token_env: B_TOKEN
    allowed_methods: [GET, POST]
    denied_operations:
      - { rpc_method: SendStreamingMessage }
    approval:
      required_for: { operations: [{ a2a_operation: approve }] }
      approvers: [requester]
`;
// B again, listening before it is made, so its card names the address it is reached at.
let agentB;
const b = await listenHono((req) => agentB.fetch(req));
const bBase = `http://127.0.0.1:${b.port}`;
agentB = await createApp({ env: { ...SERVICE_ENV, APP_URL: bBase }, logWrite: () => {} });
const bUrl = `${bBase}/a2a/app`;
const agentA = await createApp({
  env: { ...SERVICE_ENV, B_URL: bBase, B_TOKEN: KEY, APP_URL: "http://127.0.0.1:9" },
  policyText: A_POLICY,
  tools: [],
  logWrite: () => {},
});
const a = await listenHono((req) => agentA.fetch(req));
const chatUrl = `http://127.0.0.1:${a.port}/chat`;
const ASK = JSON.stringify({ message: `/call ask_b ${JSON.stringify({ message: TEXT })}\n/answer done` });
const CHAT_HEADERS = { authorization: `Bearer ${KEY}`, "content-type": "application/json", accept: "text/event-stream" };

async function checkAsk() {
  const res = await fetch(chatUrl, { method: "POST", headers: CHAT_HEADERS, body: ASK });
  const text = await res.text();
  const result = text.split("\n\n").find((f) => f.startsWith("event: tool.result"));
  const data = result && JSON.parse(result.split("\n").find((l) => l.startsWith("data: ")).slice(6));
  if (data?.is_error) throw new Error(`ask_b failed: ${data.result.slice(0, 300)}`);
  const answer = data && JSON.parse(data.result);
  if (res.status !== 200 || data?.is_error || answer?.state !== "completed" || answer?.text !== `echo: ${TEXT}`)
    throw new Error(`ask_b: unexpected answer ${text.slice(0, 1000)}`);
}
await checkAsk();
const askRun = async () => {
  const go = (seconds) => autocannon({ url: chatUrl, method: "POST", headers: CHAT_HEADERS, body: ASK, connections: opts.connections, duration: seconds, workers: 1 });
  if (opts.warmup > 0) await go(opts.warmup);
  const r = await go(opts.seconds);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts };
};
/** One request at a time, `n` times: the round trip itself, without queueing behind other requests. */
async function oneAtATime(n, send) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await send();
    times.push(performance.now() - t);
  }
  times.sort((x, y) => x - y);
  return { p50: times[Math.floor(n / 2)], p99: times[Math.floor(n * 0.99)] };
}
const seqAsk = await oneAtATime(200, async () => (await fetch(chatUrl, { method: "POST", headers: CHAT_HEADERS, body: ASK })).text());
const seqDirect = await oneAtATime(200, async () => (await fetch(bUrl, { method: "POST", headers: HEADERS, body: body("SendMessage") })).text());
log(
  `${"ask A -> B, 1 at a time".padEnd(21)} A /chat p50 ${seqAsk.p50.toFixed(2)} ms, p99 ${seqAsk.p99.toFixed(2)} ms | direct SendMessage to B p50 ${seqDirect.p50.toFixed(2)} ms, p99 ${seqDirect.p99.toFixed(2)} ms` +
    ` | the ask adds ${(seqAsk.p50 - seqDirect.p50).toFixed(2)} ms at p50 (A's run, its model turns and the policy client)`,
);
const ask = await askRun();
const direct = await measure(bUrl, "SendMessage");
rows.push({ method: "ask", s: ask, r: direct });
log(
  `${"ask A -> B".padEnd(21)} A /chat ${ask.rps.toFixed(0).padStart(6)} req/s (p50 ${ask.p50} ms, p99 ${ask.p99} ms, bad ${ask.bad})` +
    ` | direct SendMessage to B ${direct.rps.toFixed(0).padStart(6)} req/s (p50 ${direct.p50} ms, p99 ${direct.p99} ms, bad ${direct.bad})` +
    ` | ratio ${(ask.rps / direct.rps).toFixed(2)} (A and B share this process and its one event loop)`,
);

await closeServer(a.server);
await agentA.close();
await closeServer(b.server);
await agentB.close();
await closeServer(svc.server);
await closeServer(ref.server);
await app.close();
process.exit(rows.every((x) => x.s.bad === 0 && x.r.bad === 0) ? 0 : 1);
