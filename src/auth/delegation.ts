/**
 * The rules every auth policy's principal goes through after authenticate (spec 5.6): a valid
 * id, a delegation chain within the depth limit, an allowed actor, and only lent roles kept.
 */
import { forbidden, unauthorized } from "../problems.js";
import type { Settings } from "../settings/parse.js";
import { type Principal, validPrincipalId } from "./principal.js";

export function applyDelegationRules(principal: Principal, settings: Settings): Principal {
  // An invalid id is the policy's fault, not the caller's: a 500, logged (spec 2.1).
  if (!validPrincipalId(principal.id)) throw new Error("the auth policy returned an invalid principal id");
  const actor = principal.actor;
  if (!actor) return principal;
  if (!validPrincipalId(actor.id) || !actor.chain.every(validPrincipalId)) throw unauthorized("Invalid bearer token: invalid actor claim.", true);
  if (1 + actor.chain.length > settings.AUTH_MAX_DELEGATION_DEPTH) throw unauthorized("Invalid bearer token: delegation too deep.", true);
  const allowed = settings.AUTH_ALLOWED_ACTORS;
  if (!allowed.includes("*") && !allowed.includes(actor.id)) throw forbidden(`Delegated caller ${actor.id} is not allowed here`);
  const lent = settings.AUTH_DELEGATED_ROLES;
  return { ...principal, roles: principal.roles.filter((r) => lent.includes(r)) };
}
