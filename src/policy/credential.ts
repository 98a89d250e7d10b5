/**
 * The credential the policy puts on an outbound call (spec 8): none, the API's own bearer token,
 * the caller's credential forwarded, or a token exchanged for the caller's (spec 5.8). Decided
 * before anything is sent, so a missing credential refuses the call instead of sending it
 * without one.
 */
import type { Principal } from "../auth/principal.js";
import { ApiPolicyError } from "../errors.js";
import { isLoopbackHost } from "../settings/fields.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { ApiPolicy } from "./document.js";
import type { TokenExchanger } from "./exchange.js";

export interface Credential {
  readonly header: string;
  readonly value: string;
}

/** `tokens`: the bearer tokens of `auth: bearer` APIs, by API name. */
export function credentialFor(tokens: ReadonlyMap<string, string>, api: ApiPolicy, principal: Principal): Credential | undefined {
  switch (api.auth) {
    case "none":
      return undefined;
    case "bearer": {
      const token = tokens.get(api.name);
      if (!token) throw new ApiPolicyError(`the credential of API ${api.name} is not configured; nothing was sent`);
      return { header: "Authorization", value: `Bearer ${token}` };
    }
    case "forward": {
      if (api.forwardAudience !== undefined) {
        // The caller's own verified token, only when it was issued for this audience.
        const token = principal.token;
        if (!token || !token.audiences.includes(api.forwardAudience))
          throw new ApiPolicyError(`the caller's token is not for API ${api.name}'s audience; nothing was sent`);
        return { header: api.forwardHeader, value: `Bearer ${token.raw}` };
      }
      const credential = principal.credentials[api.name];
      if (!credential) throw new ApiPolicyError(`the caller has no credential to forward to API ${api.name}; nothing was sent`);
      return { header: api.forwardHeader, value: credential };
    }
    case "exchange":
      // Exchanged later, by `exchangedCredential`: after the limits and just before sending.
      return undefined;
  }
}

/**
 * The credential of an `auth: exchange` API: `Bearer <token>` in its `forward_header`, the token
 * exchanged for the caller's (exchange.ts). Without an exchanger (no TOKEN_EXCHANGE_URL, under
 * dev) the call is refused, never sent without a credential.
 */
export async function exchangedCredential(exchanger: TokenExchanger | undefined, api: ApiPolicy, principal: Principal, logger: Logger, span?: TraceSpan): Promise<Credential> {
  if (!exchanger) throw new ApiPolicyError(`token exchange for API ${api.name} is not configured (TOKEN_EXCHANGE_URL); nothing was sent`);
  return { header: api.forwardHeader, value: `Bearer ${await exchanger.tokenFor(api, principal, logger, span)}` };
}

/**
 * A credential to a `protocol: a2a` API over plain http is refused outside dev unless the host is
 * loopback, a single-label name or a cluster-internal `.svc` name (spec 5.8): true when `url`
 * would send it elsewhere.
 */
export function plainHttpElsewhere(url: string): boolean {
  if (!URL.canParse(url)) return true;
  const u = new URL(url);
  if (u.protocol !== "http:") return false;
  const host = u.hostname.toLowerCase().replace(/\.$/, "");
  if (isLoopbackHost(host)) return false;
  if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(host)) return false;
  return !(host.endsWith(".svc") || host.endsWith(".svc.cluster.local"));
}
