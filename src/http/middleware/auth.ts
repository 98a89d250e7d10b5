import type { MiddlewareHandler } from "hono";
import { makeCaller } from "../../auth/caller.js";
import { applyDelegationRules } from "../../auth/delegation.js";
import type { Action } from "../../auth/principal.js";
import type { PrincipalHasher } from "../../auth/hashing.js";
import type { AuthPolicy } from "../../auth/policy.js";
import type { Settings } from "../../settings/parse.js";
import { forbidden } from "../../problems.js";
import type { HttpEnv } from "../env.js";
import { originAllowed } from "./cors.js";

/**
 * Authenticates with the configured policy, applies the rules every policy shares (valid id,
 * permission for the route's action) and sets the caller. Runs before any body is read.
 */
export type RequireAuth = (action: Action) => MiddlewareHandler<HttpEnv>;

export function authGuard({ auth, hashPrincipal, settings }: { auth: AuthPolicy; hashPrincipal: PrincipalHasher; settings: Settings }): RequireAuth {
  const readAcross = settings.AUTH_READ_ACROSS_ROLES;
  return (action) =>
    async function authMiddleware(c, next) {
    const principal = applyDelegationRules(await auth.authenticate(c.req.raw), settings);
    if (!originAllowed(c, settings.CORS_ALLOWED_ORIGINS)) throw forbidden("This origin is not allowed.");
    if (!principal.permissions.has(action)) throw forbidden(`Not permitted: ${action}.`);
    if (auth.authorize) {
      const threadId = c.req.param("thread_id");
      if (!(await auth.authorize(principal, action, threadId ? { thread_id: threadId } : {}))) throw forbidden(`Not permitted: ${action}.`);
    }
    const hash = await hashPrincipal(principal.id);
    c.set("caller", makeCaller(principal, hash, readAcross));
    c.set("logger", c.get("logger").child({ principal_hash: hash, actor: principal.actor?.id }));
    await next();
  };
}
