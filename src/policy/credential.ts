/**
 * The credential the policy puts on an outbound call (spec 8): none, the API's own bearer token,
 * or the caller's credential forwarded. Decided before anything is sent, so a missing credential
 * refuses the call instead of sending it without one.
 */
import type { Principal } from "../auth/principal.js";
import { ApiPolicyError } from "../errors.js";
import type { ApiPolicy } from "./document.js";

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
      throw new ApiPolicyError(`token exchange for API ${api.name} is not available in this release; nothing was sent`);
  }
}
