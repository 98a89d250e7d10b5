/**
 * Tools from OpenAPI (TOOLS_FROM_OPENAPI, CONTRACT 7): every operation of a policy API's
 * `openapi` document that the policy can allow becomes a tool. The policy's own judge decides,
 * once at startup, on the operation's method, path template and operationId (placeholders
 * standing for one segment each), so an operation the policy denies or leaves off its allow-list
 * is never offered; what the model then sends is judged again, call by call, with the real ids,
 * through `ctx.api.request`: gates, limits and approvals apply as to any tool. The tools declare
 * their calls and are checked against the policy like any other tool.
 */
import { ConfigurationError } from "../../../errors.js";
import type { JsonValue } from "../../../json.js";
import type { LogFields, Logger } from "../../../observability/logger.js";
import { PolicyError, type PolicyProblem } from "../../../policy/document.js";
import { describeCall, judge } from "../../../policy/judge.js";
import { type OpenApiDocument, type OperationEntry, operationsOf } from "../../../policy/openapi.js";
import { checkLaterTools, type PolicySetup } from "../../../policy/setup.js";
import type { ApiRequest } from "../../../policy/types.js";
import { defineTool, type Tool } from "../define.js";
import { toolName } from "./naming.js";
import { type OperationPlan, queryValue, readOperation } from "./operation.js";

/** What one made tool stands for (policy:check lists them). */
export interface OpenApiToolInfo {
  readonly name: string;
  readonly api: string;
  readonly method: string;
  readonly path: string;
  readonly operationId: string | undefined;
  /** The policy holds its calls for a person's approval. */
  readonly gated: boolean;
}

export interface OpenApiWarning {
  readonly message: string;
  readonly fields: LogFields;
}

export interface OpenApiTools {
  readonly tools: readonly Tool[];
  readonly made: readonly OpenApiToolInfo[];
  /** One per operation with parts that cannot be offered, and one per document tools cannot be made from. */
  readonly warnings: readonly OpenApiWarning[];
  /** Two made tools of one name, and declared calls the policy refuses (there should be none). */
  readonly problems: readonly PolicyProblem[];
}

export type OpenApiSetup = Pick<PolicySetup, "policy" | "labels" | "openapi">;

const origins = new WeakMap<Tool, OpenApiToolInfo>();

export function openApiTools(setup: OpenApiSetup): OpenApiTools {
  const tools: Tool[] = [];
  const made: OpenApiToolInfo[] = [];
  const warnings: OpenApiWarning[] = [];
  const problems: PolicyProblem[] = [];
  const byName = new Map<string, OpenApiToolInfo>();
  for (const [apiName, doc] of setup.openapi) {
    const api = setup.policy.apis.get(apiName);
    if (!api) continue;
    const unfit = documentProblem(api.protocol, doc);
    if (unfit) {
      warnings.push({ message: `no tools are made from the OpenAPI file of API ${apiName}: ${unfit}`, fields: { api: apiName } });
      continue;
    }
    const reader = { root: doc.root, v30: doc.version.startsWith("3.0") };
    for (const entry of operationsOf(doc.root)) {
      const call = describeCall(entry.method, entry.path, { operationId: entry.operationId });
      const verdict = judge(api, call);
      if (!verdict.allowed || !setup.labels.fits(apiName, call)) continue;
      const reading = readOperation(reader, entry);
      if (reading.plan === undefined || reading.leftOut.length > 0) warnings.push(warningFor(apiName, entry, reading.plan !== undefined, reading.plan ? reading.leftOut : reading.unusable));
      if (reading.plan === undefined) continue;
      const info: OpenApiToolInfo = { name: toolName(apiName, entry.method, entry.path, entry.operationId), api: apiName, method: entry.method, path: entry.path, operationId: entry.operationId, gated: verdict.gate !== null };
      const twin = byName.get(info.name);
      if (twin) {
        problems.push({ place: `tools.${info.name}`, message: `two tools have this name: ${about(twin)} and ${about(info)}` });
        continue;
      }
      byName.set(info.name, info);
      const tool = makeTool(info, reading.plan);
      origins.set(tool, info);
      tools.push(tool);
      made.push(info);
    }
  }
  problems.push(...checkLaterTools(setup, tools));
  return { tools, made, warnings, problems };
}

/**
 * Adds the tools made from the policy's OpenAPI files beside the agent's others: warnings are
 * logged, and two tools of one name (made ones, or a made one and another) stop startup naming both.
 */
export function addOpenApiTools(tools: Map<string, Tool>, setup: OpenApiSetup | undefined, logger: Logger): void {
  if (!setup || setup.openapi.size === 0) {
    logger.warning(`TOOLS_FROM_OPENAPI is on, but ${setup ? "no API of the policy names an openapi file" : "there is no API policy"}: no tools are made`);
    return;
  }
  const result = openApiTools(setup);
  for (const w of result.warnings) logger.warning(w.message, w.fields);
  if (result.problems.length > 0) throw new PolicyError(result.problems);
  for (const clash of nameClashes(tools.values(), result.made)) throw new ConfigurationError(clash.message);
  for (const tool of result.tools) tools.set(tool.name, tool);
  logger.info("tools from OpenAPI", { tools: result.made.map((t) => t.name).join(",") || null, count: result.made.length });
}

/** Messages for made tools whose name another tool already has. */
export function nameClashes(others: Iterable<{ readonly name: string }>, made: readonly OpenApiToolInfo[]): { name: string; message: string }[] {
  const names = new Map<string, { readonly name: string }>();
  for (const t of others) names.set(t.name, t);
  const out: { name: string; message: string }[] = [];
  for (const info of made) {
    const other = names.get(info.name);
    if (!other) continue;
    const otherInfo = origins.get(other as Tool);
    const described = otherInfo ? about(otherInfo) : `the agent's tool ${other.name} (given to createApp, by TOOLS_MODULE, a default tool or a peer agent tool)`;
    out.push({ name: info.name, message: `Two tools are named ${info.name}: ${about(info)}, and ${described}. Rename the operationId or the other tool.` });
  }
  return out;
}

function makeTool(info: OpenApiToolInfo, plan: OperationPlan): Tool {
  const { api, method, path, operationId } = info;
  return defineTool({
    name: info.name,
    description: plan.description,
    parameters: plan.parameters,
    calls: [{ api, method, path, ...(operationId !== undefined ? { operation_id: operationId } : {}) }],
    async run(args, ctx) {
      const pathParams: Record<string, string | number> = {};
      const query: Record<string, NonNullable<ReturnType<typeof queryValue>>> = {};
      for (const p of plan.params) {
        const value = args[p.name];
        if (value === undefined) continue;
        if (p.in === "path") pathParams[p.name] = typeof value === "number" ? value : typeof value === "string" ? value : JSON.stringify(value);
        else {
          const sent = queryValue(value, p);
          if (sent !== undefined) query[p.name] = sent;
        }
      }
      const body = plan.body ? (args.body as JsonValue | undefined) : undefined;
      const request: ApiRequest = {
        method,
        path,
        ...(Object.keys(pathParams).length > 0 ? { pathParams } : {}),
        ...(Object.keys(query).length > 0 ? { query } : {}),
        ...(body !== undefined ? { body } : {}),
        ...(body !== undefined && plan.body && plan.body.mediaType !== "application/json" ? { headers: { "content-type": plan.body.mediaType } } : {}),
        ...(operationId !== undefined ? { operationId } : {}),
      };
      const res = await ctx.api.request(api, request);
      return { status: res.status, body: res.body };
    },
  });
}

/** Why no tools can be made from a document, or undefined. */
function documentProblem(protocol: string, doc: OpenApiDocument): string | undefined {
  if (protocol !== "http") return `it is a ${protocol} API (its calls are JSON-RPC requests, not the document's operations)`;
  if (!/^3\.[0-9]+(\.|$)/.test(doc.version))
    return `${doc.version.startsWith("swagger") ? `Swagger ${doc.version.slice(8)}` : `OpenAPI ${doc.version}`} is not supported (OpenAPI 3.0 and 3.1 are)`;
  return undefined;
}

function about(info: Pick<OpenApiToolInfo, "api" | "method" | "path" | "operationId">): string {
  return `the OpenAPI operation ${info.method} ${info.path}${info.operationId !== undefined ? ` (${info.operationId})` : ""} of API ${info.api}`;
}

function warningFor(api: string, entry: OperationEntry, offered: boolean, parts: readonly string[]): OpenApiWarning {
  const what = about({ api, method: entry.method, path: entry.path, operationId: entry.operationId });
  const message = offered ? `${what} is offered as a tool without: ${parts.join("; ")}` : `${what} is not offered as a tool: ${parts.join("; ")}`;
  return { message, fields: { api, method: entry.method, path: entry.path, operation_id: entry.operationId ?? null } };
}
