/**
 * shared-bearer (spec 5.2): one principal, `shared`, for every holder of API_KEY. An unset key
 * answers 503, never "no auth".
 */
import { unauthorized, unavailable } from "../problems.js";
import type { Ids } from "../ids.js";
import { bearerToken, type AuthPolicy } from "./policy.js";
import { ACTIONS, type Principal } from "./principal.js";
import { secretMatcher } from "./hashing.js";

const DETAIL = "Missing or invalid bearer token.";

export const SHARED_PRINCIPAL: Principal = Object.freeze({
  id: "shared",
  roles: [],
  permissions: new Set(ACTIONS),
  attributes: {},
  credentials: {},
  actor: null,
});

export function createSharedBearerPolicy(apiKey: string | undefined, ids: Ids): AuthPolicy {
  const matches = apiKey ? secretMatcher(apiKey) : undefined;
  return {
    name: "shared-bearer",
    async authenticate(request) {
      if (!matches) throw unavailable("Authentication is not configured: API_KEY is not set.", ids.errorId());
      const token = bearerToken(request);
      if (token === undefined) throw unauthorized(DETAIL, false);
      if (token === "" || !matches(token)) throw unauthorized(DETAIL, true);
      return SHARED_PRINCIPAL;
    },
  };
}
