/** A policy that cannot decide answers 503 to every guarded request (spec 5, 5.4's default stub). */
import type { Ids } from "../ids.js";
import { unavailable } from "../problems.js";
import type { AuthPolicy } from "./policy.js";

export function createUnavailablePolicy(name: AuthPolicy["name"], ids: Ids): AuthPolicy {
  return {
    name,
    async authenticate() {
      throw unavailable("Authentication is not available: the auth policy is not configured.", ids.errorId());
    },
  };
}
