/**
 * Picks the auth policy from AUTH_POLICY (spec 5). A misconfigured policy stops startup outside
 * dev, naming the problem; under APP_ENV=dev the service starts, logs it and answers every
 * guarded request 503.
 */
import type { Clock } from "../clock.js";
import { ConfigurationError } from "../errors.js";
import type { Ids } from "../ids.js";
import type { Logger } from "../observability/logger.js";
import type { Settings } from "../settings/parse.js";
import { adaptCustomPolicy, type CustomAuthPolicy } from "./custom.js";
import { createJwtPolicy } from "./jwt/policy.js";
import type { AuthPolicy } from "./policy.js";
import { createSharedBearerPolicy } from "./shared-bearer.js";
import { createUnavailablePolicy } from "./unavailable.js";

export async function chooseAuthPolicy(
  settings: Settings,
  custom: CustomAuthPolicy | undefined,
  deps: { fetch: typeof fetch; clock: Clock; ids: Ids; logger: Logger },
): Promise<AuthPolicy> {
  let policy: AuthPolicy;
  let problems: readonly string[] = [];
  if (custom) {
    policy = adaptCustomPolicy(custom);
    problems = (await custom.startup_problems?.()) ?? [];
  } else if (settings.AUTH_POLICY === "jwt") {
    const jwt = await createJwtPolicy({ settings, ...deps });
    policy = jwt;
    problems = jwt.problems;
  } else if (settings.AUTH_POLICY === "custom") {
    deps.logger.warning("AUTH_POLICY is custom but no policy was supplied: every guarded request answers 503");
    return createUnavailablePolicy("custom", deps.ids);
  } else {
    // Spec 5.2: no key is never no auth. Said once at startup, where an operator looks first.
    if (!settings.API_KEY) deps.logger.warning("AUTH_POLICY is shared-bearer but API_KEY is not set: every guarded request answers 503");
    policy = createSharedBearerPolicy(settings.API_KEY, deps.ids);
  }

  if (problems.length === 0) return policy;
  if (!settings.dev) throw new ConfigurationError(`The auth policy is misconfigured: ${problems.join("; ")}.`);
  for (const problem of problems) deps.logger.error(`auth policy misconfigured: ${problem}`);
  return createUnavailablePolicy(policy.name, deps.ids);
}

/** Spec 5.8: credential modes of the API policy that the auth policy cannot serve. */
