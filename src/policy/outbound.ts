/**
 * One decided call on the wire: send it, refuse a redirect, read the answer up to its cap. The
 * deadline and the run's stop are raced around this in client.ts's `InFlight`, which says why no
 * signal is passed to fetch; they end an exchange through its `ExchangeState`.
 */
import { ApiCallError } from "../errors.js";
import type { JsonValue } from "../json.js";
import type { ApiPolicy } from "./document.js";
import type { ApiResponse } from "./types.js";
import { parseAnswer, readAnswer } from "./wire.js";

/** A call with every refusal decided: only sending it and reading its answer are left. */
export interface OutboundCall {
  readonly api: ApiPolicy;
  readonly method: string;
  /** Base URL, judged path and query, joined by hand: the path that was judged is the path sent. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: JsonValue | undefined;
  /** Names the call in the log: its operation id, else its path as a template (call-template.ts). */
  readonly operation: string;
}

/** What an exchange has seen so far, shared with the deadline that may cut it short. */
export interface ExchangeState {
  /** Set once the call is over (answered, timed out or stopped): the answer is no longer read. */
  stopped: boolean;
  answer: Response | undefined;
  /** The upstream's status, 0 until one is read. */
  status: number;
}

/**
 * What the client hands the injected fetch: a web RequestInit, plus the API's connect timeout
 * (`timeouts_ms.connect`). Web fetch has no notion of it and ignores the member; a runtime whose
 * fetch can bound the connection enforces it (the Node entry does, src/runtime/outbound.ts).
 */
export type OutboundInit = RequestInit & { readonly connectTimeoutMs?: number };

export async function exchange(fetchFn: typeof fetch, call: OutboundCall, state: ExchangeState): Promise<ApiResponse> {
  const { api } = call;
  const init: OutboundInit = { redirect: "manual", connectTimeoutMs: api.timeouts.connect };
  if (call.method !== "GET") init.method = call.method;
  // No headers member when there are none: undici reads even an empty record key by key (about
  // 3 us a call on Node 20, measured over loopback).
  if (hasAny(call.headers)) init.headers = call.headers;
  if (call.body !== undefined) init.body = JSON.stringify(call.body);
  const response = await fetchFn(call.url, init);
  state.answer = response;
  if (state.stopped) {
    await response.body?.cancel().catch(() => {});
    throw new ApiCallError("stopped");
  }
  const status = response.status;
  state.status = status;
  if ((status >= 300 && status < 400) || (status === 0 && response.type === "opaqueredirect")) {
    await response.body?.cancel().catch(() => {});
    throw new ApiCallError(`API ${api.name} answered with a redirect, which is never followed`, { status });
  }
  const bytes = await readAnswer(response, api.limits.maxResponseBytes, () => state.stopped);
  // Plain data, as a tool reads, spreads, compares or stores it (CONTRACT: `{ status, headers,
  // body }`); Set-Cookie never reaches it. Not an object literal with a lazy getter: V8 builds
  // such a literal on its slow path (about 5 µs a call on Node 20 in a CPU profile); with the
  // copy made here, bench:policy reads as it did with the copy made lazily by a class. The
  // content type is read from the copy: a second trip through Headers cost about 1 µs a call.
  const headers = answerHeaders(response.headers);
  return { status, body: parseAnswer(bytes, headers["content-type"] ?? null), headers };
}

function answerHeaders(received: Headers): Record<string, string> {
  const headers: Record<string, string> = {};
  received.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  return headers;
}

function hasAny(record: Readonly<Record<string, string>>): boolean {
  for (const _ in record) return true;
  return false;
}
