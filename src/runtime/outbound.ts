/// <reference types="node" />
/**
 * The Node entry's outbound fetch: undici's, with the connection bounded by the API's
 * `timeouts_ms.connect` (the policy client passes it as `connectTimeoutMs`). Web fetch cannot
 * tell connecting from waiting for the answer, so the core bounds the whole answer only; here the
 * dispatcher refuses a connection that is not made in time. One dispatcher per timeout value.
 */
import { Agent, fetch as undiciFetch } from "undici";

export function nodeOutboundFetch(): typeof fetch {
  const agents = new Map<number, Agent>();
  const agentFor = (ms: number) => {
    let agent = agents.get(ms);
    if (!agent) agents.set(ms, (agent = new Agent({ connect: { timeout: ms } })));
    return agent;
  };
  return ((input: RequestInfo | URL, init?: RequestInit & { connectTimeoutMs?: number }) => {
    const ms = init?.connectTimeoutMs;
    if (ms === undefined) return fetch(input, init);
    const { connectTimeoutMs: _ms, ...rest } = init!;
    return undiciFetch(input as never, { ...(rest as object), dispatcher: agentFor(ms) } as never) as unknown as Promise<Response>;
  }) as typeof fetch;
}
