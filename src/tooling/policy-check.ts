/**
 * The policy check behind `npm run policy:check`: the document, the environment each API needs
 * and the tools' declared calls, as startup checks them (preparePolicy), without starting the
 * service. Problems come back as data, never thrown. Tooling, not policy/: it needs the agent's
 * default tools, and policy/ sits below agent/ in the layer order.
 */
import { DEFAULT_TOOLS } from "../agent/default-agent.js";
import type { Tool } from "../agent/tools/define.js";
import { hasCode } from "../errors.js";
import type { ReadText } from "../files.js";
import type { PolicyError, PolicyProblem } from "../policy/document.js";
import { preparePolicy } from "../policy/setup.js";
import { parseSettings } from "../settings/parse.js";

export interface PolicyCheckResult {
  readonly problems: readonly PolicyProblem[];
  readonly warnings: readonly string[];
  /** API names of a clean policy; empty when there is none. */
  readonly apis: readonly string[];
}

export async function checkPolicy(options: {
  env: Readonly<Record<string, string | undefined>>;
  tools?: readonly Tool[];
  /** Reads the policy and OpenAPI files (the package entry passes the host's reader). */
  readText: ReadText;
}): Promise<PolicyCheckResult> {
  const settings = parseSettings(options.env);
  try {
    const setup = await preparePolicy({
      path: settings.API_POLICY_PATH,
      explicit: Boolean(options.env.API_POLICY_PATH),
      readText: options.readText,
      env: options.env,
      tools: options.tools ?? DEFAULT_TOOLS,
      recursionLimit: settings.RECURSION_LIMIT,
    });
    return { problems: [], warnings: setup?.warnings ?? [], apis: setup ? [...setup.policy.apis.keys()] : [] };
  } catch (error) {
    if (hasCode(error, "invalid_policy")) return { problems: (error as PolicyError).problems, warnings: [], apis: [] };
    throw error;
  }
}
