/**
 * The origin extension toward a peer (spec 4.5): with A2A_FORWARD_ORIGIN=auto and a card that
 * declares the extension, the message carries the user's own words of this run, capped at
 * A2A_ORIGIN_MAX_CHARS code points (`truncated` says so), and `hops`, how many agents the words
 * pass through: this one and the agents before it. Without the words (a client that is not the
 * policy's per-tool-call client) nothing is sent.
 */
import type { JsonValue } from "../../json.js";
import { isPeerApiClient } from "../../policy/types.js";
import { ORIGIN_EXTENSION_URI } from "../origin.js";
import type { PeerCard } from "./card.js";
import { hopsToPeer } from "./identity.js";
import type { Session } from "./session.js";

export function originMetadata(s: Session, card: PeerCard): Record<string, JsonValue> | undefined {
  if (!s.settings.forwardOrigin || !card.origin || !isPeerApiClient(s.ctx.api)) return undefined;
  const words = s.ctx.api.originWords;
  if (words === undefined) return undefined;
  const points = Array.from(words);
  const max = s.settings.originMaxChars;
  const origin = { text: points.length > max ? points.slice(0, max).join("") : words, truncated: points.length > max, hops: hopsToPeer(s.ctx.principal) };
  return { [ORIGIN_EXTENSION_URI]: { origin } };
}
