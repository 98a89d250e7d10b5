import type { MiddlewareHandler } from "hono";
import { makeCaller } from "../../auth/caller.js";
import { type Action, validPrincipalId } from "../../auth/principal.js";
import type { Deps } from "../../deps.js";
import { forbidden } from "../../problems.js";
import type { HttpEnv } from "../env.js";

/**
 * Authenticates with the configured policy, applies the rules every policy shares (valid id,
 * permission for the route's action) and sets the caller. Runs before any body is read.
 */
export function requireAuth(deps: Deps, action: Action): MiddlewareHandler<HttpEnv> {
  const readAcross = deps.settings.AUTH_READ_ACROSS_ROLES;
  return async function authMiddleware(c, next) {
    const principal = await deps.auth.authenticate(c.req.raw);
    if (!validPrincipalId(principal.id)) throw new Error("the auth policy returned an invalid principal id");
    if (!principal.permissions.has(action)) throw forbidden(`Not permitted: ${action}.`);
    const hash = await deps.hashPrincipal(principal.id);
    c.set("caller", makeCaller(principal, hash, readAcross));
    c.set("logger", c.get("logger").child({ principal_hash: hash, actor: principal.actor?.id }));
    await next();
  };
}
