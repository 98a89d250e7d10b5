/** The caller, as every policy produces it (spec 2.1). */
import type { JsonValue } from "../json.js";

export const ACTIONS = [
  "chat.send",
  "thread.read",
  "thread.list",
  "thread.delete",
  "run.read",
  "a2a.invoke",
  "card.read",
  "approval.read",
  "approval.decide",
] as const;
export type Action = (typeof ACTIONS)[number];

export interface Actor {
  /** The agent presenting the request for the user. */
  readonly id: string;
  /** Earlier agents, nearest first. */
  readonly chain: readonly string[];
  readonly client: string | null;
}

export interface Principal {
  readonly id: string;
  readonly roles: readonly string[];
  readonly permissions: ReadonlySet<Action>;
  /** Public attributes: persisted, logged and traced. */
  readonly attributes: Readonly<Record<string, JsonValue>>;
  /** Secrets by API name (the `credentials` attribute): never persisted, logged or traced. */
  readonly credentials: Readonly<Record<string, string>>;
  readonly actor: Actor | null;
  /**
   * The caller's own verified bearer token (jwt): a secret, forwarded only per `forward_audience`
   * or exchanged for `auth: exchange` APIs. `expiresAt` (epoch ms, from `exp`) bounds how long a
   * token exchanged for it is reused.
   */
  readonly token?: { readonly raw: string; readonly audiences: readonly string[]; readonly expiresAt?: number };
}

/** What tools see: never the credentials. `@actor` is published as an attribute (spec 2.1). */
export interface PublicPrincipal {
  readonly id: string;
  readonly roles: readonly string[];
  readonly attributes: Readonly<Record<string, JsonValue>>;
  readonly actor: Actor | null;
}

export function publicPrincipal(p: Principal): PublicPrincipal {
  const attributes: Record<string, JsonValue> = { ...p.attributes };
  if (p.actor) attributes["@actor"] = { id: p.actor.id, chain: [...p.actor.chain], client: p.actor.client };
  return Object.freeze({ id: p.id, roles: [...p.roles], attributes, actor: p.actor });
}

/** Principal ids: 1-256 characters, no control characters (spec 2.1). */
export function validPrincipalId(id: unknown): id is string {
  if (typeof id !== "string" || id.length === 0) return false;
  // eslint-disable-next-line no-control-regex
  return Array.from(id).length <= 256 && !/[\u0000-\u001f\u007f-\u009f]/.test(id);
}
