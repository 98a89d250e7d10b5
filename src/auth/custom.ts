/**
 * AUTH_POLICY=custom (spec 5.4): a project-supplied policy object. authenticate(request) returns
 * the principal (or throws an AuthError: 401 with WWW-Authenticate, 503 when its issuer is
 * unreachable); authorize(principal, action, resource) may refuse an action; startup_problems()
 * may name what is misconfigured. Thread ownership is enforced outside the policy.
 */
import { ACTIONS, type Action, type Actor, type Principal } from "./principal.js";
import type { AuthPolicy } from "./policy.js";
import { HttpError } from "../problems.js";
import type { JsonValue } from "../json.js";

/** What a custom policy returns; missing fields get defaults (no roles, every permission). */
export interface CustomPrincipal {
  readonly id: string;
  readonly roles?: readonly string[];
  readonly permissions?: Iterable<Action>;
  /** Public attributes; `credentials` (by API name) is taken out and kept secret. */
  readonly attributes?: Readonly<Record<string, JsonValue>>;
  readonly actor?: Actor | null;
}

export interface CustomAuthPolicy {
  authenticate(request: Request): Promise<CustomPrincipal> | CustomPrincipal;
  authorize?(principal: Principal, action: Action, resource: { readonly thread_id?: string }): Promise<boolean> | boolean;
  startup_problems?(): Promise<readonly string[]> | readonly string[];
}

/** Thrown by a custom policy: 401 (adds WWW-Authenticate), 403, or 503. */
export class AuthError extends HttpError {
  constructor(status: 401 | 403 | 503, detail: string, options: { invalid?: boolean } = {}) {
    super(
      status === 401 ? "unauthorized" : status === 403 ? "forbidden" : "unavailable",
      status,
      { detail },
      status === 401 ? { "WWW-Authenticate": options.invalid === false ? "Bearer" : 'Bearer error="invalid_token"' } : {},
    );
    this.name = "AuthError";
  }
}

export function adaptCustomPolicy(custom: CustomAuthPolicy): AuthPolicy & { authorize?: CustomAuthPolicy["authorize"] } {
  return {
    name: "custom",
    async authenticate(request) {
      const p = await custom.authenticate(request);
      if (!p || typeof p !== "object") throw new AuthError(401, "Missing bearer token.", { invalid: false });
      const { credentials, ...attributes } = (p.attributes ?? {}) as Record<string, JsonValue>;
      const secrets: Record<string, string> = {};
      if (credentials && typeof credentials === "object" && !Array.isArray(credentials))
        for (const [api, value] of Object.entries(credentials)) if (typeof value === "string") secrets[api] = value;
      return {
        id: p.id,
        roles: [...(p.roles ?? [])].filter((r) => typeof r === "string" && !r.includes(",")),
        permissions: new Set(p.permissions ?? ACTIONS),
        attributes,
        credentials: secrets,
        actor: p.actor ?? null,
      };
    },
    ...(custom.authorize ? { authorize: custom.authorize.bind(custom) } : {}),
  };
}
