/**
 * Peer agents for the A2A client tests, on 127.0.0.1 (port 0), each recording every request:
 * - `sdkPeer`: the @a2a-js/sdk 1.3.0 reference server (DefaultRequestHandler, InMemoryTaskStore,
 *   an echo executor that streams "echo: <text>" in chunks of 16 characters) bound to node:http
 *   as scripts/bench-a2a.mjs does; with `version: "0.3"` the SDK's 0.3 compat JSON-RPC handler
 *   behind a 0.3 card;
 * - `handPeer`: a hand-written JSON-RPC peer whose answers the test writes (approvals, errors).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import { Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import { KEY } from "../helpers.js";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, validateVersion } from "@a2a-js/sdk/server";

/** Every peer here accepts the test key (the policy's PEER_TOKEN). */
export const PEER_KEY = KEY;
export const PEER_PATH = "/a2a";
export const PEER_CARD_PATH = `${PEER_PATH}/.well-known/agent-card.json`;

export interface PeerHit {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST, else null. */
  readonly json: Record<string, any> | null;
}

export interface Peer {
  readonly base: string;
  readonly hits: PeerHit[];
  /** The JSON-RPC calls received (POSTs to the endpoint), in order. */
  rpc(): Record<string, any>[];
  close(): Promise<void>;
}

type Respond = (req: PeerHit, res: ServerResponse) => void | Promise<void>;

async function listen(respond: Respond): Promise<{ base: string; hits: PeerHit[]; server: Server }> {
  const hits: PeerHit[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let json: Record<string, any> | null = null;
      try {
        json = text ? (JSON.parse(text) as Record<string, any>) : null;
      } catch {
        json = null;
      }
      const hit = { method: req.method!, url: req.url!, headers: req.headers, json };
      hits.push(hit);
      if (req.headers.authorization !== `Bearer ${PEER_KEY}`) {
        res.writeHead(401).end();
        return;
      }
      void respond(hit, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, hits, server };
}

function handle(l: { base: string; hits: PeerHit[]; server: Server }): Peer {
  return {
    base: l.base,
    hits: l.hits,
    rpc: () => l.hits.filter((h) => h.method === "POST" && h.url === PEER_PATH).map((h) => h.json!),
    async close() {
      l.server.closeAllConnections();
      await new Promise<void>((r) => l.server.close(() => r()));
    },
  };
}

const json = (res: ServerResponse, body: unknown): void => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));

class EchoExecutor {
  async execute(ctx: any, bus: any) {
    const { taskId, contextId } = ctx;
    const text = `echo: ${ctx.userMessage.parts.map((p: any) => (p.content?.$case === "text" ? p.content.value : "")).join("")}`;
    if (!ctx.task) bus.publish(AgentEvent.task(Task.fromJSON({ id: taskId, contextId, status: { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() }, history: [] })));
    const artifactId = `${taskId}-response`;
    const n = Math.ceil(text.length / 16);
    for (let i = 0; i < n; i++)
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({ taskId, contextId, artifact: { artifactId, name: "response", parts: [{ text: text.slice(i * 16, i * 16 + 16) }] }, append: i > 0, lastChunk: i === n - 1 }),
        ),
      );
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId, status: { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() } })));
    bus.finished();
  }
  async cancelTask(taskId: string, bus: any) {
    bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId: "", status: { state: "TASK_STATE_CANCELED" } })));
    bus.finished();
  }
}

/** The SDK's reference server with the echo executor; its card names its real URL. */
export async function sdkPeer(options: { version: "1.0" | "0.3"; streaming: boolean }): Promise<Peer> {
  let handler: DefaultRequestHandler | undefined;
  let card03: Record<string, unknown> | undefined;
  const l = await listen(async (hit, res) => {
    if (hit.method === "GET" && hit.url === PEER_CARD_PATH) return json(res, options.version === "0.3" ? card03 : await handler!.getAgentCard());
    if (hit.method !== "POST" || hit.url !== PEER_PATH) return void res.writeHead(404).end();
    const requestedVersion = (hit.headers["a2a-version"] as string | undefined) || undefined;
    const context = new ServerCallContext({ requestedVersion, state: new Map([["headers", hit.headers]]) } as never);
    try {
      let out: any;
      if (options.version === "0.3") out = await new LegacyJsonRpcTransportHandler(handler!).handle(hit.json as never, context);
      else {
        validateVersion(context.requestedVersion, await handler!.getAgentCard(), "JSONRPC");
        out = await new JsonRpcTransportHandler(handler!).handle(hit.json as never, context);
      }
      if (typeof out?.[Symbol.asyncIterator] === "function") {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        for await (const event of out) res.write(`data: ${JSON.stringify(event)}\n\n`);
        res.end();
      } else json(res, out);
    } catch (error) {
      const e = options.version === "0.3" ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error);
      if (!res.headersSent) json(res, { jsonrpc: "2.0", id: hit.json?.id ?? null, error: e });
      else res.end();
    }
  });
  const url = `${l.base}${PEER_PATH}`;
  const card = {
    name: "echo",
    description: "echo agent",
    version: "0.1.0",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: options.version === "0.3" ? "0.3" : "1.0" }],
    capabilities: { streaming: options.streaming, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "chat", name: "chat", description: "echo", tags: ["chat"] }],
  };
  handler = new DefaultRequestHandler(card as never, new InMemoryTaskStore(), new EchoExecutor() as never);
  card03 = {
    name: "echo",
    description: "echo agent",
    version: "0.1.0",
    url,
    preferredTransport: "JSONRPC",
    protocolVersion: "0.3.0",
    capabilities: { streaming: options.streaming, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "chat", name: "chat", description: "echo", tags: ["chat"] }],
  };
  return handle(l);
}

/**
 * A hand-written 1.0 peer: its card (from `card`, given the endpoint URL) and a JSON-RPC endpoint
 * whose result `answer` writes for each call (return `{error}` to answer a JSON-RPC error).
 */
export async function handPeer(answer: (call: Record<string, any>) => Record<string, any>, card: (url: string) => Record<string, unknown> = v10Card): Promise<Peer> {
  let url = "";
  const l = await listen((hit, res) => {
    if (hit.method === "GET" && hit.url === PEER_CARD_PATH) return json(res, card(url));
    if (hit.method !== "POST" || hit.url !== PEER_PATH) return void res.writeHead(404).end();
    const out = answer(hit.json!);
    json(res, "error" in out ? { jsonrpc: "2.0", id: hit.json!.id, error: out.error } : { jsonrpc: "2.0", id: hit.json!.id, result: out });
  });
  url = `${l.base}${PEER_PATH}`;
  return handle(l);
}

export function v10Card(url: string): Record<string, unknown> {
  return {
    name: "hand",
    description: "a hand-written peer",
    version: "0.1.0",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
  };
}

/** The policy of an A2A API `name` at `env`, bearer `PEER_TOKEN`; approve messages wait for the requester. */
export function peerPolicy(name: string, env: string, path: string, extra = ""): string {
  return `
apis:
  ${name}:
    protocol: a2a
    a2a: { path: ${path} }
    base_url_env: ${env}
    auth: bearer
    token_env: PEER_TOKEN
    allowed_methods: [GET, POST]
${extra}    approval:
      required_for: { operations: [{ a2a_operation: approve }] }
      approvers: [requester]
      timeout_s: 600
`;
}
