/**
 * Who a peer is, and the calls refused before anything is sent (spec 5.8):
 * - a peer's agent id is its `exchange.audience` (the id its tokens are minted for), when the API
 *   has one; the delegation chain is the principal's actor and the actor's earlier agents;
 * - this agent is TOKEN_EXCHANGE_CLIENT_ID when set, and any peer whose endpoint is this
 *   service's own A2A URL (APP_URL, else http://HOST:PORT, plus /a2a/<A2A_NAME>);
 * - outside dev, a credential never goes over plain http unless the host is loopback, a
 *   single-label name or a cluster-internal `.svc` name.
 * The context id toward a peer is stable per (thread, peer API, user), so a conversation here
 * continues one conversation there.
 */
import type { PublicPrincipal } from "../../auth/principal.js";
import { sha256Hex } from "../../auth/hashing.js";
import { plainHttpElsewhere } from "../../policy/credential.js";
import { sameEndpoint } from "./card.js";
import type { Peer } from "./peer.js";

/** What the refusals need to know about this agent. */
export interface SelfIdentity {
  /** TOKEN_EXCHANGE_CLIENT_ID, when set. */
  readonly agentId: string | undefined;
  /** This service's own A2A URL. */
  readonly url: string;
  readonly dev: boolean;
}

/**
 * The context this thread has at a peer: the same for the same thread, API and user, in UUID form
 * (version 8, the layout for custom ids, from a SHA-256 of the three), because a peer built like
 * this one refuses any other contextId under graph-server and a UUID is a thread id under both.
 */
export async function contextIdFor(threadId: string, api: string, principalId: string): Promise<string> {
  const hex = (await sha256Hex(`${threadId}\u0000${api}\u0000${principalId}`)).slice(0, 32);
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Refusals that depend on the peer and this service alone, decided once at startup. */
export function standingRefusal(peer: Peer, self: SelfIdentity): string | undefined {
  if (self.agentId !== undefined && peer.agentId === self.agentId) return `API ${peer.name} is this agent (${self.agentId}); an agent does not call itself`;
  if (sameEndpoint(peer.endpoint, self.url)) return `API ${peer.name} is this agent's own A2A endpoint; an agent does not call itself`;
  if (!self.dev && peer.credential && plainHttpElsewhere(peer.endpoint))
    return `API ${peer.name} would send a credential over plain http to a host that is not loopback, a single-label name or a .svc name (refused outside dev)`;
  return undefined;
}

/** A call to an agent already in the delegation chain (it would call itself through us). */
export function chainRefusal(peer: Peer, principal: PublicPrincipal): string | undefined {
  const actor = principal.actor;
  if (peer.agentId === undefined || !actor) return undefined;
  if (actor.id === peer.agentId || actor.chain.includes(peer.agentId))
    return `API ${peer.name} is the agent ${peer.agentId}, already in the delegation chain of this request`;
  return undefined;
}


/** How many agents the user's words pass through on the way to the peer: this one, and those before it. */
export function hopsToPeer(principal: PublicPrincipal): number {
  const actor = principal.actor;
  return 1 + (actor ? 1 + actor.chain.length : 0);
}
