/**
 * Startup checks (spec 5.8) of the API policy against the auth policy in force: per-user
 * credential modes need per-user principals, and token exchange needs its issuer settings.
 * Under graph-server both credential modes are refused, and createApp stops there even under dev.
 */
import type { AuthPolicy } from "../auth/policy.js";
import type { Settings } from "../settings/parse.js";
import type { Policy } from "./document.js";

export function authCompatibilityProblems(policy: Policy | undefined, settings: Settings, auth: AuthPolicy["name"]): string[] {
  const problems: string[] = [];
  for (const [name, api] of policy?.apis ?? []) {
    // The graph server persists each run's configuration and context: a caller's credentials
    // must never reach it, so the credential modes that carry them are refused there (spec 1).
    if (settings.runtime === "graph-server" && (api.auth === "forward" || api.auth === "exchange"))
      problems.push(`apis.${name}.auth ${api.auth} is refused under RUNTIME graph-server (the caller's credentials would be persisted)`);
    if (auth === "shared-bearer" && (api.auth === "forward" || api.auth === "exchange"))
      problems.push(`apis.${name}.auth ${api.auth} needs per-user credentials; shared-bearer has none`);
    if (auth === "jwt" && api.auth === "forward" && !api.forwardAudience)
      problems.push(`apis.${name}.auth forward under jwt needs forward_audience`);
    if (api.auth === "exchange" && !settings.dev)
      for (const v of ["TOKEN_EXCHANGE_URL", "TOKEN_EXCHANGE_CLIENT_ID", "TOKEN_EXCHANGE_CLIENT_SECRET"] as const)
        if (!settings[v]) problems.push(`apis.${name}.auth exchange needs ${v}`);
  }
  return problems;
}

