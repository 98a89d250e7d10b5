/**
 * A2A interop with the real @a2a-js/sdk 1.3.0 client (spec 4.5; docs/a2a-wire.md §1.3): the
 * service served on 127.0.0.1 by @hono/node-server, its card fetched by the SDK, and every call
 * driven through `Client` under 1.0 and through the SDK's 0.3 compat transport.
 */
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Message, TaskState, taskStateToJSON } from "@a2a-js/sdk";
import { Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY, makeApp, type TestApp } from "../helpers.js";

let app: TestApp;
let server: ServerType;
let base: string;
const CARD_PATH = "/a2a/app/.well-known/agent-card.json";

const authFetch: typeof fetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${KEY}`);
  return fetch(url, { ...init, headers });
};

beforeAll(async () => {
  // The card's URL needs the port before createApp: serve a proxy first, then create the app.
  let target: TestApp | undefined;
  server = serve({ fetch: (req) => (target ? target.fetch(req) : new Response("starting", { status: 503 })), port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((r) => (server.listening ? r() : server.once("listening", () => r())));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app = await makeApp({ APP_URL: base });
  target = app;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await app?.close();
});

const msg = (text: string, extra: Record<string, unknown> = {}) =>
  Message.fromJSON({ messageId: `m-${Math.random().toString(36).slice(2)}`, role: "ROLE_USER", parts: [{ text }], ...extra });

const textOf = (parts: { content?: { $case: string; value: unknown } }[]) =>
  parts.filter((p) => p.content?.$case === "text").map((p) => p.content!.value as string).join("");

async function client10(): Promise<any> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
      transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
    }),
  );
  return factory.createFromUrl(base, CARD_PATH);
}

/** A 0.3 client: the served card lists 1.0 too (which the SDK prefers), so hand it a pure 0.3 card built from it. */
async function client03(): Promise<any> {
  const card = (await (await authFetch(`${base}${CARD_PATH}`)).json()) as Record<string, any>;
  const iface = (card.supportedInterfaces as { url: string; protocolVersion: string }[]).find((i) => i.protocolVersion === "0.3")!;
  const { supportedInterfaces: _si, securitySchemes: _ss, securityRequirements: _sr, ...rest } = card;
  const card03 = {
    ...rest,
    url: iface.url,
    preferredTransport: "JSONRPC",
    protocolVersion: "0.3.0",
    securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    security: [{ bearer: [] }],
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch, legacyCompat: { enabled: true } }),
      transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: true } })],
    }),
  );
  return factory.createFromAgentCard(card03 as never);
}

async function threadMessages(threadId: string) {
  const res = await fetch(`${base}/threads/${threadId}/messages`, { headers: { Authorization: `Bearer ${KEY}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as { role: string; content: string }[];
}

describe("the card", () => {
  it("is fetched by the SDK resolver and names an absolute 1.0 JSON-RPC interface on APP_URL", async () => {
    const client = await client10();
    expect(client.protocolVersion).toBe("1.0");
    const card = (await (await authFetch(`${base}${CARD_PATH}`)).json()) as Record<string, any>;
    expect(card.supportedInterfaces[0]).toEqual({ url: `${base}/a2a/app`, protocolBinding: "JSONRPC", protocolVersion: "1.0" });
  });
});

describe("A2A 1.0 through the SDK client", () => {
  it("sendMessage: completed task with a `response` artifact; contextId is the chat thread", async () => {
    const client = await client10();
    const result = (await client.sendMessage({ message: msg("hi") })) as any;
    expect("messageId" in result).toBe(false);
    expect(taskStateToJSON(result.status.state)).toBe("TASK_STATE_COMPLETED");
    expect(result.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(result.artifacts).toHaveLength(1);
    expect(result.artifacts[0].name).toBe("response");
    expect(textOf(result.artifacts[0].parts)).toBe("echo: hi");
    expect(result.contextId).toBeTruthy();
    const messages = await threadMessages(result.contextId);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "echo: hi"],
    ]);
  });

  it("sendMessageStream: task snapshot first, artifact chunks join to the answer, the last one lastChunk, ends completed", async () => {
    const client = await client10();
    const text = "stream this answer across several chunks please";
    const events: any[] = [];
    for await (const ev of client.sendMessageStream({ message: msg(text) })) events.push(ev);
    expect(events[0].payload.$case).toBe("task");
    const taskId = events[0].payload.value.id;
    const chunks = events.filter((e) => e.payload.$case === "artifactUpdate").map((e) => e.payload.value);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => textOf(c.artifact.parts)).join("")).toBe(`echo: ${text}`);
    expect(chunks.at(-1).lastChunk).toBe(true);
    expect(chunks.slice(0, -1).every((c) => c.lastChunk === false)).toBe(true);
    expect(chunks.every((c) => c.artifact.name === "response" && c.taskId === taskId)).toBe(true);
    const last = events.at(-1);
    expect(last.payload.$case).toBe("statusUpdate");
    expect(last.payload.value.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const got = (await client.getTask({ id: taskId })) as any;
    expect(textOf(got.artifacts[0].parts)).toBe(`echo: ${text}`);
  });

  it("getTask and listTasks", async () => {
    const client = await client10();
    const sent = (await client.sendMessage({ message: msg("list me") })) as any;
    const got = (await client.getTask({ id: sent.id })) as any;
    expect(got.id).toBe(sent.id);
    expect(got.contextId).toBe(sent.contextId);
    expect(got.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(got.artifacts[0].parts)).toBe("echo: list me");

    const all = (await client.listTasks({} as never)) as any;
    expect(all.tasks.map((t: any) => t.id)).toContain(sent.id);
    const inContext = (await client.listTasks({ contextId: sent.contextId, pageSize: 10 } as never)) as any;
    expect(inContext.tasks.map((t: any) => t.id)).toEqual([sent.id]);

    await expect(client.getTask({ id: "no-such-task" })).rejects.toMatchObject({ name: "TaskNotFoundError", envelopeCode: -32001 });
  });

  it("cancelTask on a running task: the stream ends canceled and GetTask reads canceled", async () => {
    const client = await client10();
    const stream = client.sendMessageStream({ message: msg("/sleep 3000\nx") })[Symbol.asyncIterator]();
    const first = (await stream.next()).value as any;
    expect(first.payload.$case).toBe("task");
    const id = first.payload.value.id;
    expect(first.payload.value.status.state).toBe(TaskState.TASK_STATE_WORKING);
    const started = Date.now();
    const canceled = (await client.cancelTask({ id })) as any;
    expect(canceled.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    const rest: any[] = [];
    for (;;) {
      const n = await stream.next();
      if (n.done) break;
      rest.push(n.value);
    }
    expect(Date.now() - started).toBeLessThan(2500);
    expect(rest.at(-1).payload.$case).toBe("statusUpdate");
    expect(rest.at(-1).payload.value.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(((await client.getTask({ id })) as any).status.state).toBe(TaskState.TASK_STATE_CANCELED);
    // A terminal task cannot be canceled again.
    await expect(client.cancelTask({ id })).rejects.toMatchObject({ name: "TaskNotCancelableError", envelopeCode: -32002 });
  });
});

/** Polls GetTask through `client` until the task leaves the working state. */
async function settledTask(client: any, id: string): Promise<any> {
  const until = Date.now() + 5_000;
  for (;;) {
    const got = (await client.getTask({ id })) as any;
    if (got.status.state !== TaskState.TASK_STATE_WORKING || Date.now() > until) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("SendMessage configuration (returnImmediately / blocking, historyLength) through the SDK", () => {
  for (const version of ["1.0", "0.3"] as const) {
    const open = version === "1.0" ? client10 : client03;

    it(`${version}: returnImmediately answers the task at once while the run goes on; GetTask later shows the outcome`, async () => {
      const client = await open();
      const started = Date.now();
      const sent = (await client.sendMessage({ message: msg("/sleep 1500\nlater"), configuration: { returnImmediately: true } })) as any;
      expect(Date.now() - started).toBeLessThan(1000);
      expect(sent.status.state).toBe(TaskState.TASK_STATE_WORKING);
      expect(sent.artifacts ?? []).toEqual([]);
      const done = await settledTask(client, sent.id);
      expect(done.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(done.artifacts[0].parts)).toBe("echo: later");
    });

    it(`${version}: historyLength caps the answer's history (0: none); without it the history holds the request`, async () => {
      const client = await open();
      const full = (await client.sendMessage({ message: msg("remember me") })) as any;
      expect(full.history).toHaveLength(1);
      expect(full.history[0].messageId).toBeTruthy();
      expect(full.history[0].taskId).toBe(full.id);
      expect(textOf(full.history[0].parts)).toBe("remember me");
      const one = (await client.sendMessage({ message: msg("once"), configuration: { historyLength: 1 } })) as any;
      expect(one.history.map((m: any) => textOf(m.parts))).toEqual(["once"]);
      const none = (await client.sendMessage({ message: msg("forget me"), configuration: { historyLength: 0 } })) as any;
      expect(none.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(none.history ?? []).toEqual([]);
    });
  }
});

describe("A2A 0.3 through the SDK compat client", () => {
  it("sends, streams, gets and cancels", async () => {
    const client = await client03();
    expect(client.protocolVersion).toBe("0.3");
    expect(client.transport.constructor.name).toMatch(/LegacyJsonRpcTransport/);

    const sent = (await client.sendMessage({ message: msg("hi") })) as any;
    expect(sent.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(sent.artifacts[0].name).toBe("response");
    expect(textOf(sent.artifacts[0].parts)).toBe("echo: hi");

    const events: any[] = [];
    for await (const ev of client.sendMessageStream({ message: msg("hello over 0.3 in pieces") })) events.push(ev);
    expect(events[0].payload.$case).toBe("task");
    const chunks = events.filter((e) => e.payload.$case === "artifactUpdate").map((e) => e.payload.value);
    expect(chunks.map((c) => textOf(c.artifact.parts)).join("")).toBe("echo: hello over 0.3 in pieces");
    expect(chunks.at(-1).lastChunk).toBe(true);
    expect(events.at(-1).payload.value.status.state).toBe(TaskState.TASK_STATE_COMPLETED);

    const got = (await client.getTask({ id: sent.id })) as any;
    expect(got.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(got.artifacts[0].parts)).toBe("echo: hi");
    await expect(client.getTask({ id: "nope" })).rejects.toMatchObject({ name: "TaskNotFoundError", envelopeCode: -32001 });

    const stream = client.sendMessageStream({ message: msg("/sleep 3000\nx") })[Symbol.asyncIterator]();
    const first = (await stream.next()).value as any;
    const id = first.payload.value.id;
    const canceled = (await client.cancelTask({ id })) as any;
    expect(canceled.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    let last: any;
    for (;;) {
      const n = await stream.next();
      if (n.done) break;
      last = n.value;
    }
    expect(last.payload.value.status.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it("an old client without A2A-Version (bare compat transport) is served as 0.3", async () => {
    const client = await client10();
    const sent = (await client.sendMessage({ message: msg("old") })) as any;
    const seen: (string | null)[] = [];
    const spy: typeof fetch = (url, init = {}) => {
      seen.push(new Headers(init.headers).get("a2a-version"));
      return authFetch(url, init);
    };
    const transport: any = new LegacyJsonRpcTransport({ endpoint: `${base}/a2a/app`, fetchImpl: spy });
    const got = (await transport.getTask({ id: sent.id } as never)) as any;
    expect(seen).toEqual([null]);
    expect(got.id).toBe(sent.id);
    expect(got.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // Client around the same transport sends 0.3.
    const wrapped: any = new Client(new LegacyJsonRpcTransport({ endpoint: `${base}/a2a/app`, fetchImpl: authFetch }), { capabilities: { streaming: true } } as never);
    expect(((await wrapped.getTask({ id: sent.id })) as any).status.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

describe("the 1.0 example of spec 4.5, by hand", () => {
  it("answers with {jsonrpc, id, result: {task: {id, contextId, status: {state}, artifacts: [{name, parts}]}}}", async () => {
    const res = await fetch(`${base}/a2a/app`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: "req-1", method: "SendMessage", params: { message: { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "hi" }] } } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as Record<string, any>;
    expect(Object.keys(body).sort()).toEqual(["id", "jsonrpc", "result"]);
    expect(body.jsonrpc).toBe("2.0");
    expect(body.id).toBe("req-1");
    expect(Object.keys(body.result)).toEqual(["task"]);
    const task = body.result.task;
    expect(typeof task.id).toBe("string");
    expect(typeof task.contextId).toBe("string");
    expect(task.kind).toBeUndefined();
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts).toHaveLength(1);
    expect(task.artifacts[0].name).toBe("response");
    expect(task.artifacts[0].parts).toEqual([{ text: "echo: hi" }]);
    // Numeric ids keep their JSON type.
    const res2 = await fetch(`${base}/a2a/app`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "GetTask", params: { id: task.id } }),
    });
    const got = (await res2.json()) as Record<string, any>;
    expect(got.id).toBe(7);
    expect(got.result.id).toBe(task.id);
    expect(got.result.task).toBeUndefined();
  });
});
