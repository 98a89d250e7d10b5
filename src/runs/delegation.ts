/**
 * How a run treats a request another agent presents for the user (spec 2.10 A2A_CALLER_NOTE,
 * A2A_DELEGATED_MENTIONS), on every path such a request reaches the agent: POST /chat, A2A, and a
 * run resumed after a decision. A resumed run has no forwarded origin words (they are never
 * stored), so under `origin` it counts none: it may narrow what the first run allowed, never widen.
 */
import type { Caller } from "../auth/caller.js";

export interface DelegationRules {
  /** A2A_CALLER_NOTE=on: the system prompt says another agent wrote the request. */
  readonly callerNote: boolean;
  /** A2A_DELEGATED_MENTIONS: which words require_user_mentioned reads for a delegated request. */
  readonly mentions: "origin" | "refuse" | "request";
}

export interface Framing {
  /** Added to the system prompt, or undefined. */
  readonly systemNote: string | undefined;
  /** The words require_user_mentioned reads. */
  readonly userWords: string;
}

/**
 * `request` is the text the caller sent (for a resumed run, the request that paused it);
 * `origin` the user's own words as the calling agent forwarded them, when it did.
 */
export function framingFor(caller: Caller, rules: DelegationRules, request: string, origin: string | undefined): Framing {
  const actor = caller.principal.actor;
  if (!actor) return { systemNote: undefined, userWords: request };
  const forwarded = origin ? ` The user's own words, as that agent forwarded them: ${JSON.stringify(origin)}` : "";
  return {
    systemNote: rules.callerNote ? `Another agent (${actor.id}) wrote this request on behalf of the user.${forwarded}` : undefined,
    userWords: rules.mentions === "request" ? request : rules.mentions === "origin" ? (origin ?? "") : "",
  };
}
