/**
 * The policy check behind `npm run policy:check`: the document, the environment each API needs
 * and the tools' declared calls, as startup checks them (preparePolicy), and with TOOLS_FROM_OPENAPI
 * the tools made from the OpenAPI files (their names, clashes and calls), without starting the
 * service. Problems come back as data, never thrown. Tooling, not policy/: it needs the agent's
 * default tools, and policy/ sits below agent/ in the layer order.
 */
import { DEFAULT_TOOLS } from "../agent/default-agent.js";
import type { Tool } from "../agent/tools/define.js";
import { nameClashes, type OpenApiToolInfo, openApiTools } from "../agent/tools/openapi/tools.js";
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
  /** The tools TOOLS_FROM_OPENAPI makes from the APIs' OpenAPI files (empty when it is off). */
  readonly tools: readonly OpenApiToolInfo[];
}

export async function checkPolicy(options: {
  env: Readonly<Record<string, string | undefined>>;
  tools?: readonly Tool[];
  /** Makes and checks the tools from the OpenAPI files as TOOLS_FROM_OPENAPI does; default: that setting. */
  openapiTools?: boolean;
  /** Reads the policy and OpenAPI files (the package entry passes the host's reader). */
  readText: ReadText;
}): Promise<PolicyCheckResult> {
  const settings = parseSettings(options.env);
  try {
    const tools = options.tools ?? DEFAULT_TOOLS;
    const setup = await preparePolicy({
      path: settings.API_POLICY_PATH,
      explicit: Boolean(options.env.API_POLICY_PATH),
      readText: options.readText,
      env: options.env,
      tools,
      recursionLimit: settings.RECURSION_LIMIT,
    });
    const warnings = [...(setup?.warnings ?? [])];
    let made: readonly OpenApiToolInfo[] = [];
    if (setup && (options.openapiTools ?? settings.TOOLS_FROM_OPENAPI)) {
      const result = openApiTools(setup);
      warnings.push(...result.warnings.map((w) => w.message));
      const problems = [...result.problems, ...nameClashes(tools, result.made).map((c) => ({ place: `tools.${c.name}`, message: c.message }))];
      if (problems.length > 0) return { problems, warnings, apis: [], tools: [] };
      made = result.made;
    }
    return { problems: [], warnings, apis: setup ? [...setup.policy.apis.keys()] : [], tools: made };
  } catch (error) {
    if (hasCode(error, "invalid_policy")) return { problems: (error as PolicyError).problems, warnings: [], apis: [], tools: [] };
    throw error;
  }
}
