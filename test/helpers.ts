/** Shared test helpers: an app on the fake model and an SSE reader for /chat responses. */
import { createApp, type CreateAppOptions } from "../src/index.js";
import { decodeSse } from "../src/sse-decode.js";

export const KEY = "test-key-0123456789";

export interface TestApp extends Awaited<ReturnType<typeof createApp>> {
  logs: Record<string, unknown>[];
  rawLogs: string[];
}

export async function makeApp(env: Record<string, string> = {}, options: Omit<CreateAppOptions, "env" | "logWrite"> = {}): Promise<TestApp> {
  const rawLogs: string[] = [];
  const app = await createApp({
    env: { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_FORMAT: "json", ...env },
    logWrite: (line) => void rawLogs.push(line),
    ...options,
  });
  Object.defineProperty(app, "logs", { get: () => rawLogs.map((l) => JSON.parse(l) as Record<string, unknown>) });
  return Object.assign(app, { rawLogs }) as TestApp;
}

export interface SseEvent {
  event: string;
  data: Record<string, any>;
}

export function post(path: string, body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(`http://test${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export function get(path: string, headers: Record<string, string> = {}): Request {
  return new Request(`http://test${path}`, { headers: { Authorization: `Bearer ${KEY}`, ...headers } });
}

/** Parses an SSE body into events (comments and a last event without its blank line are dropped). */
export function parseSse(text: string): SseEvent[] {
  return decodeSse(text).map(({ event, data }) => ({ event, data: JSON.parse(data) }));
}

/** POST /chat and read the whole stream. */
export async function chat(app: { fetch(r: Request): Promise<Response> }, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await app.fetch(post("/chat", body, headers));
  const text = await res.text();
  return { res, text, events: res.status === 200 ? parseSse(text) : [], json: res.status === 200 ? undefined : JSON.parse(text) };
}

/** Reads a stream until an event of `name` arrives; returns what was read so far. */
export async function readUntil(res: Response, predicate: (events: SseEvent[]) => boolean) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (predicate(parseSse(text))) break;
  }
  return { reader, events: parseSse(text), text };
}

export const answerText = (events: SseEvent[]) =>
  events.filter((e) => e.event === "message.delta").map((e) => e.data.text as string).join("");

/** Polls `check` until it holds, for up to `ms`; a failure carries `context()` (a process's output, say). */
export const waitFor = async (check: () => boolean | Promise<boolean>, ms = 5000, context?: () => string) => {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`waitFor: condition not met in time${context ? `\n${context()}` : ""}`);
};

/** Reads what is left of a stream that readUntil stopped in, after `head`, to its end. */
export async function readRest(reader: ReadableStreamDefaultReader<Uint8Array>, head: string): Promise<string> {
  const decoder = new TextDecoder();
  let text = head;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
  }
}
