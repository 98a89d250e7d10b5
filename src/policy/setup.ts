/**
 * Startup: reads the policy document and its OpenAPI files, checks the environment each API
 * needs (base URL, bearer token) and every tool's declared calls, and reports every problem at
 * once as one PolicyError. Without a policy file every outbound call is refused.
 */
import { type ReadText, readNamedFile } from "../files.js";
import { isHttpUrl } from "../settings/fields.js";
import { checkDeclaredCalls, type DeclaringTool } from "./declared.js";
import { loadPolicy, type Policy, PolicyError, type PolicyProblem } from "./document.js";
import { buildLabelIndex, type LabelIndex, type OpenApiOperation } from "./labels.js";
import { type OpenApiDocument, parseOpenApi } from "./openapi.js";

export interface PolicySetup {
  readonly policy: Policy;
  readonly baseUrls: ReadonlyMap<string, string>;
  readonly tokens: ReadonlyMap<string, string>;
  readonly labels: LabelIndex;
  /** The APIs' OpenAPI files, read (tools can be made from them: TOOLS_FROM_OPENAPI). */
  readonly openapi: ReadonlyMap<string, OpenApiDocument>;
  /** Worth a startup warning, not an error. */
  readonly warnings: readonly string[];
}

export interface PolicySetupInput {
  readonly path: string;
  /** True when API_POLICY_PATH was set: then a missing file is an error. */
  readonly explicit: boolean;
  readonly readText: ReadText;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly tools: readonly DeclaringTool[];
  readonly recursionLimit: number;
  /** A document given as text (for runtimes without files); wins over `path`. */
  readonly text?: string | undefined;
}

export async function preparePolicy(input: PolicySetupInput): Promise<PolicySetup | undefined> {
  const read = input.text !== undefined ? { text: input.text } : await readNamedFile(input.readText, input.path);
  if ("unreadable" in read) throw new PolicyError([{ place: "API_POLICY_PATH", message: read.unreadable }]);
  const { text } = read;
  if (text === undefined) {
    if (input.explicit) throw new PolicyError([{ place: "API_POLICY_PATH", message: "names a file that does not exist" }]);
    const declared = checkDeclaredCalls(input.tools, undefined, undefined, new Map());
    if (declared.length > 0) throw new PolicyError(declared);
    return undefined;
  }
  const policy = loadPolicy(text, input.text === undefined ? input.path : undefined);
  const problems: PolicyProblem[] = [];
  const baseUrls = new Map<string, string>();
  const tokens = new Map<string, string>();
  const documents = new Map<string, OpenApiDocument>();
  const warnings: string[] = [];
  const maxSequentialCalls = Math.floor((input.recursionLimit - 2) / 2);

  for (const [name, api] of policy.apis) {
    const place = `apis.${name}`;
    const base = input.env[api.baseUrlEnv];
    if (!base) problems.push({ place: `${place}.base_url_env`, message: `names ${api.baseUrlEnv}, which is not set` });
    else if (!isHttpUrl(base) || /[?#]/.test(base)) problems.push({ place: `${place}.base_url_env`, message: `${api.baseUrlEnv} must be an absolute http(s) URL without query or fragment` });
    else {
      const url = new URL(base);
      baseUrls.set(name, `${url.origin}${url.pathname.replace(/\/+$/, "")}`);
    }
    if (api.auth === "bearer" && api.tokenEnv) {
      const token = input.env[api.tokenEnv];
      if (!token) problems.push({ place: `${place}.token_env`, message: `names ${api.tokenEnv}, which is not set` });
      else if (/[\r\n]/.test(token)) problems.push({ place: `${place}.token_env`, message: `${api.tokenEnv} holds a line break` });
      else tokens.set(name, token);
    }
    if (api.openapi) {
      const doc = await readNamedFile(input.readText, api.openapi);
      if ("unreadable" in doc) problems.push({ place: `${place}.openapi`, message: doc.unreadable });
      else if (doc.text === undefined) problems.push({ place: `${place}.openapi`, message: "names a file that does not exist" });
      else {
        try {
          documents.set(name, parseOpenApi(doc.text));
        } catch (error) {
          problems.push({ place: `${place}.openapi`, message: error instanceof Error ? error.message : "cannot be read" });
        }
      }
    }
    const max = api.limits.maxCallsPerRun;
    if (max !== undefined && max > maxSequentialCalls)
      warnings.push(`apis.${name}.limits.max_calls_per_run (${max}) cannot be reached by sequential calls under RECURSION_LIMIT ${input.recursionLimit} (at most ${maxSequentialCalls})`);
  }
  const openapi = operationsByApi(documents);
  const labels = buildLabelIndex(policy, openapi);
  problems.push(...checkDeclaredCalls(input.tools, policy, labels, openapi));
  if (problems.length > 0) throw new PolicyError(problems);
  return { policy, baseUrls, tokens, labels, openapi: documents, warnings };
}

/** Checks the declared calls of tools made after startup (from the policy itself) as startup checks the others. */
export function checkLaterTools(setup: Pick<PolicySetup, "policy" | "labels" | "openapi">, tools: readonly DeclaringTool[]): PolicyProblem[] {
  return checkDeclaredCalls(tools, setup.policy, setup.labels, operationsByApi(setup.openapi));
}

function operationsByApi(documents: ReadonlyMap<string, OpenApiDocument>): Map<string, readonly OpenApiOperation[]> {
  return new Map([...documents].map(([name, doc]) => [name, doc.operations]));
}
