/**
 * A peer agent's card (CONTRACT 6), read through the policy client at
 * `<a2a.path>/.well-known/agent-card.json` and checked before anything else is sent: it must name
 * a JSON-RPC interface of version 1.0 or 0.3 whose URL is the endpoint the policy sends to (same
 * origin and path once parsed; a card naming another host or path is refused, so a card cannot
 * steer calls elsewhere). Both shapes are read: 1.0 cards list `supportedInterfaces`
 * (`protocolBinding: JSONRPC`, `protocolVersion`; ours and the @a2a-js/sdk server's), 0.3 cards
 * name one `url` with `protocolVersion` 0.3.x and `preferredTransport` JSONRPC or none. A checked
 * card is reused for A2A_CARD_TTL_S seconds per API (0: read before every call).
 */
import type { Clock } from "../../clock.js";
import { ApiCallError } from "../../errors.js";
import type { JsonValue } from "../../json.js";
import type { ApiClient } from "../../policy/types.js";
import type { A2AVersion } from "../jsonrpc.js";
import { ORIGIN_EXTENSION_URI } from "../origin.js";
import type { Peer } from "./peer.js";
import { isObject } from "./reply.js";

export interface PeerCard {
  readonly version: A2AVersion;
  readonly streaming: boolean;
  /** The card declares the origin extension (spec 4.5). */
  readonly origin: boolean;
  /** The name the card gives the agent (a relayed approval's `reported_by`). */
  readonly name: string | null;
}

const V10 = /^1\.0(\.\d+)?$/;
const V03 = /^0\.3(\.\d+)?$/;

/** Same origin and path once parsed (a trailing slash aside). */
export function sameEndpoint(a: string, b: string): boolean {
  if (!URL.canParse(a) || !URL.canParse(b)) return false;
  const x = new URL(a);
  const y = new URL(b);
  const path = (u: URL) => u.pathname.replace(/\/+$/, "");
  return x.origin === y.origin && path(x) === path(y);
}

/** The version to speak at `endpoint`, or a refusal naming what is wrong with the card. */
function versionAt(card: Record<string, JsonValue>, endpoint: string): A2AVersion | string {
  if (Array.isArray(card.supportedInterfaces)) {
    const rpc = card.supportedInterfaces.filter(isObject).filter((i) => i.protocolBinding === "JSONRPC" && typeof i.protocolVersion === "string");
    const usable = rpc.filter((i) => V10.test(String(i.protocolVersion)) || V03.test(String(i.protocolVersion)));
    if (usable.length === 0) return "names no JSON-RPC interface of A2A 1.0 or 0.3";
    const here = usable.filter((i) => typeof i.url === "string" && sameEndpoint(i.url, endpoint));
    if (here.length === 0) return "names another endpoint than the one the policy sends to";
    return here.some((i) => V10.test(String(i.protocolVersion))) ? "1.0" : "0.3";
  }
  if (typeof card.protocolVersion !== "string" || !V03.test(card.protocolVersion)) return "names no A2A version this agent speaks (1.0 or 0.3)";
  if (card.preferredTransport !== undefined && card.preferredTransport !== "JSONRPC") return "does not prefer the JSON-RPC transport";
  if (typeof card.url !== "string" || !sameEndpoint(card.url, endpoint)) return "names another endpoint than the one the policy sends to";
  return "0.3";
}

export function checkCard(api: string, raw: JsonValue | string, endpoint: string): PeerCard {
  let card: JsonValue | string = raw;
  if (typeof card === "string") {
    try {
      card = JSON.parse(card) as JsonValue;
    } catch {
      // not JSON: refused below
    }
  }
  if (!isObject(card)) throw new ApiCallError(`the card of agent ${api} is not a JSON object; nothing else was sent`);
  const version = versionAt(card, endpoint);
  if (version !== "1.0" && version !== "0.3") throw new ApiCallError(`the card of agent ${api} ${version}; nothing else was sent`);
  const capabilities = isObject(card.capabilities) ? card.capabilities : {};
  const extensions = Array.isArray(capabilities.extensions) ? capabilities.extensions.filter(isObject) : [];
  return {
    version,
    streaming: capabilities.streaming === true,
    origin: extensions.some((e) => e.uri === ORIGIN_EXTENSION_URI),
    name: typeof card.name === "string" ? card.name : null,
  };
}

export interface CardBook {
  /** The peer's checked card: the one read within A2A_CARD_TTL_S, else read now. */
  get(client: ApiClient, peer: Peer): Promise<PeerCard>;
}

export function createCardBook(clock: Clock, ttlS: number): CardBook {
  const cards = new Map<string, { card: PeerCard; until: number }>();
  return {
    async get(client, peer) {
      const hit = cards.get(peer.name);
      if (hit && clock.now() < hit.until) return hit.card;
      // A server that serves both versions picks the card's shape by this header (the SDK's does).
      const response = await client.request(peer.name, { method: "GET", path: peer.cardPath, headers: { "A2A-Version": "1.0" } });
      if (response.status !== 200) throw new ApiCallError(`the card of agent ${peer.name} could not be read (HTTP ${response.status}); nothing else was sent`, { status: response.status });
      const card = checkCard(peer.name, response.body, peer.endpoint);
      if (ttlS > 0) cards.set(peer.name, { card, until: clock.now() + ttlS * 1000 });
      return card;
    },
  };
}
