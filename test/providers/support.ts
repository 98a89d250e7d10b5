/**
 * Shared by the provider tests: a loopback server that records every request and answers through a
 * swappable handler, a fetch that refuses anything off loopback, SSE writers, and the request and
 * conversation the tests send.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { ModelEvent, ModelRequest, ToolSpec } from "../../src/agent/model.js";
import type { Message } from "../../src/store/ports.js";

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
  /** Settles when the server sees the exchange end: the answer finished or the client hung up. */
  closed: Promise<void>;
}

/** Answers one request; `attempt` counts the requests of the current test, from 1. */
export type Handler = (req: Recorded, res: ServerResponse, attempt: number) => void | Promise<void>;

export interface Upstream {
  /** `http://127.0.0.1:<port>` plus the base path; set once the server listens (beforeAll). */
  readonly baseURL: string;
  /** Answers every request; a 500 until a test sets it. */
  handler: Handler;
  /** The requests of the current test, in order (cleared in place after each test). */
  readonly requests: Recorded[];
  /** Every URL handed to `fetch` in the current test (cleared in place after each test). */
  readonly fetchedUrls: string[];
  /** The transport handed to the provider: records every URL, refuses anything off loopback. */
  readonly fetch: typeof fetch;
}

/**
 * Starts a loopback upstream for the test file (beforeAll / afterAll). After each test it checks
 * that nothing but the loopback server was asked (and `checkUrl`, when given, on every URL), then
 * clears `requests` and `fetchedUrls`.
 */
export function loopbackUpstream(options: { basePath?: string; checkUrl?: (url: string) => void } = {}): Upstream {
  let server: Server;
  let baseURL = "";
  const requests: Recorded[] = [];
  const fetchedUrls: string[] = [];

  const upstream: Upstream = {
    get baseURL() {
      return baseURL;
    },
    handler: (_req, res) => void res.writeHead(500).end(),
    requests,
    fetchedUrls,
    fetch: async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      fetchedUrls.push(url);
      if (new URL(url).hostname !== "127.0.0.1") throw new TypeError(`refused non-loopback request to ${new URL(url).host}`);
      return fetch(input, init);
    },
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const closed = new Promise<void>((resolve) => res.on("close", () => resolve()));
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const recorded: Recorded = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: text ? JSON.parse(text) : null, closed };
        requests.push(recorded);
        void upstream.handler(recorded, res, requests.length);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}${options.basePath ?? ""}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  afterEach(() => {
    for (const url of fetchedUrls) {
      expect(new URL(url).hostname).toBe("127.0.0.1");
      options.checkUrl?.(url);
    }
    requests.length = 0;
    fetchedUrls.length = 0;
  });

  return upstream;
}

/** Writes a whole event stream and ends the response. */
export function sse(res: ServerResponse, frames: string[]): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const f of frames) res.write(f);
  res.end();
}

/** Starts an event stream with these frames and leaves it open: the rest never comes. */
export function sseOpen(res: ServerResponse, frames: string[]): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const f of frames) res.write(f);
}

/** Writes an event stream a frame every `gapMs` (the first at once) and ends it, unless the client has gone. */
export function sseSpaced(res: ServerResponse, frames: string[], gapMs: number): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const [first, ...rest] = frames;
  res.write(first ?? "");
  const timer = setInterval(() => {
    const next = rest.shift();
    if (next === undefined || res.destroyed) {
      clearInterval(timer);
      res.end();
    } else res.write(next);
  }, gapMs);
  res.on("close", () => clearInterval(timer));
}

/** Answers with `frames()` after `ms`, unless the client has gone by then. */
export function sseLate(res: ServerResponse, ms: number, frames: () => string[]): void {
  const timer = setTimeout(() => (res.destroyed ? undefined : sse(res, frames())), ms);
  res.on("close", () => clearTimeout(timer));
}

export async function collect(stream: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

/** What `promise` settles to, or undefined when it has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The error a promise rejects with; throws when it resolves. */
export async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
}

/** Reads a stream and aborts `controller` with `reason` at every event: the events read and the error it failed with. */
export async function abortAtFirstEvent(
  stream: AsyncIterable<ModelEvent>,
  controller: AbortController,
  reason: unknown,
): Promise<{ events: ModelEvent[]; error: Error }> {
  const events: ModelEvent[] = [];
  const error = await failure(
    (async () => {
      for await (const e of stream) {
        events.push(e);
        controller.abort(reason);
      }
    })(),
  );
  return { events, error };
}

export const weatherTool: ToolSpec = {
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
};
export const timeTool: ToolSpec = {
  name: "get_time",
  description: "Time in a zone",
  parameters: { type: "object", properties: { zone: { type: "string" } } },
};

/** The request every provider test sends: a system prompt, the messages, two tools. */
export function request(messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    system: "You are a test agent.",
    messages,
    tools: [weatherTool, timeTool],
    signal: new AbortController().signal,
    ...extra,
  };
}

/**
 * The conversation the tests share: a user question, an assistant turn calling get_weather and
 * get_time under the given call ids, and their results (the second one an error).
 */
export function conversation(callIds: [string, string], assistantContent: string) {
  const [a, b] = callIds;
  const user: Message = { id: "m1", role: "user", content: "Weather in Oslo and the time?" };
  const assistantCalls: Message = {
    id: "m2",
    role: "assistant",
    content: assistantContent,
    tool_calls: [
      { id: a, name: "get_weather", args: { city: "Oslo" } },
      { id: b, name: "get_time", args: { zone: "UTC" } },
    ],
  };
  const results: Message[] = [
    { id: "m3", role: "tool", content: "sunny", tool_call_id: a, name: "get_weather", is_error: false },
    { id: "m4", role: "tool", content: "boom", tool_call_id: b, name: "get_time", is_error: true },
  ];
  return { user, assistantCalls, results };
}
