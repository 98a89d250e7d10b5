/**
 * The origin extension (spec 4.5) and the note about the calling agent. A delegated caller may
 * forward the user's own words in message metadata; they are read for delegated principals only
 * (a direct caller's message already is the user's words), capped at A2A_ORIGIN_MAX_CHARS, and
 * never stored with the task or traced: they only shape the run's system note and the words that
 * require_user_mentioned checks (the run layer frames the request: runs/delegation.ts).
 */
import type { Caller } from "../auth/caller.js";
import type { Settings } from "../settings/parse.js";
import type { IncomingMessage } from "./wire.js";

export const ORIGIN_EXTENSION_URI = "urn:agent-service:a2a:origin:v1";

export interface Origin {
  /** The user's words as the calling agent forwarded them, capped; undefined when none came. */
  readonly text: string | undefined;
  /** `hops` is above AUTH_MAX_DELEGATION_DEPTH: the task fails (`delegation chain too deep`). */
  readonly tooDeep: boolean;
}

type OriginSettings = Pick<Settings, "AUTH_MAX_DELEGATION_DEPTH" | "A2A_ORIGIN_MAX_CHARS">;

export function readOrigin(caller: Caller, msg: IncomingMessage, settings: OriginSettings): Origin {
  if (!caller.principal.actor) return { text: undefined, tooDeep: false };
  const ext = msg.metadata[ORIGIN_EXTENSION_URI];
  const origin = ext && typeof ext === "object" && !Array.isArray(ext) ? ext.origin : undefined;
  if (!origin || typeof origin !== "object" || Array.isArray(origin)) return { text: undefined, tooDeep: false };
  const hops = typeof origin.hops === "number" ? origin.hops : 0;
  if (hops > settings.AUTH_MAX_DELEGATION_DEPTH) return { text: undefined, tooDeep: true };
  const text = typeof origin.text === "string" ? Array.from(origin.text).slice(0, settings.A2A_ORIGIN_MAX_CHARS).join("") : undefined;
  return { text, tooDeep: false };
}
