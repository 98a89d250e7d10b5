/// <reference types="node" />
/**
 * The Node entry's outbound fetch: undici's, with the connection bounded by the API's
 * `timeouts_ms.connect` (the policy client passes it as `connectTimeoutMs`). Web fetch cannot
 * tell connecting from waiting for the answer, so the core bounds the whole answer only; here the
 * dispatcher refuses a connection that is not made in time. One dispatcher per timeout value.
 */
import type { Agent } from "undici";

/** undici is loaded at the first call that needs it: about 20 MB of RSS a process without outbound calls does not pay. */
let undici: Promise<typeof import("undici")> | undefined;

export function nodeOutboundFetch(): typeof fetch {
  const agents = new Map<number, Agent>();
  return (async (input: RequestInfo | URL, init?: RequestInit & { connectTimeoutMs?: number }) => {
    const ms = init?.connectTimeoutMs;
    if (ms === undefined) return fetch(input, init);
    const { connectTimeoutMs: _ms, ...rest } = init!;
    const { Agent, fetch: undiciFetch } = await (undici ??= import("undici"));
    let agent = agents.get(ms);
    if (!agent) agents.set(ms, (agent = new Agent({ connect: { timeout: ms } })));
    return undiciFetch(input as never, { ...(rest as object), dispatcher: agent } as never) as unknown as Promise<Response>;
  }) as typeof fetch;
}
