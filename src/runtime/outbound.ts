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
  /** undici once loaded: later calls go to it without waiting a turn for the import. */
  let loaded: typeof import("undici") | undefined;

  function send(mod: typeof import("undici"), input: RequestInfo | URL, init: RequestInit & { connectTimeoutMs?: number }, ms: number): Promise<Response> {
    let agent = agents.get(ms);
    if (!agent) agents.set(ms, (agent = new mod.Agent({ connect: { timeout: ms } })));
    // The init's members less the connect timeout, copied by hand: object rest and spread cost
    // more than the loop on a call's path. The dispatcher is set last: ours wins.
    const options: Record<string, unknown> = {};
    for (const key in init) if (key !== "connectTimeoutMs" && Object.hasOwn(init, key)) options[key] = init[key as keyof RequestInit];
    options.dispatcher = agent;
    return mod.fetch(input as never, options as never) as unknown as Promise<Response>;
  }

  return ((input: RequestInfo | URL, init?: RequestInit & { connectTimeoutMs?: number }) => {
    const ms = init?.connectTimeoutMs;
    if (ms === undefined) return fetch(input, init);
    try {
      if (loaded) return send(loaded, input, init!, ms);
    } catch (error) {
      return Promise.reject(error);
    }
    return (undici ??= import("undici")).then((mod) => send((loaded = mod), input, init!, ms));
  }) as typeof fetch;
}
