/**
 * `agentcli policy explain`: which rule of the API policy allows, denies or gates one call, and
 * why. The verdict is the service's own: judgeRequest, the function the policy client calls
 * before sending anything (judge.ts, the JSON-RPC reading, the operation labels). The steps beside
 * it walk the same entries with the judge's own matchers (covers, matches, ruleCovers) to name the
 * entry that decided, in the judge's order: method allow-list, denials, allowed operations, gates.
 */
import { hasCode } from "../errors.js";
import type { JsonValue } from "../json.js";
import type { ApiPolicy, CompiledEntry, CompiledRule, Policy } from "../policy/document.js";
import { covers, describeSegments, type JudgedCall, matches, ruleCovers } from "../policy/judge.js";
import { judgeRequest } from "../policy/judge-request.js";
import { readRpcCall } from "../policy/jsonrpc.js";
import type { LabelIndex } from "../policy/labels.js";
import { resolvePath } from "../policy/paths.js";
import type { ApiRequest } from "../policy/types.js";

export interface ExplainStep {
  /** The part of the API's policy read (`allowed_methods`, `denied_operations[0]`, `approval[1]`). */
  readonly place: string;
  readonly outcome: "passes" | "refuses" | "matches" | "gates" | "skipped";
  readonly detail: string;
}

export interface Explanation {
  readonly api: string;
  readonly method: string;
  readonly path: string;
  /** `sent`: allowed and sent at once; `gated`: allowed once a person approves; `refused`: nothing is sent. */
  readonly verdict: "sent" | "gated" | "refused";
  /** The refusal as the tool would read it. */
  readonly reason: string | undefined;
  readonly gate: { readonly rule: string; readonly approvers: readonly string[]; readonly decide_with: string; readonly relayers: readonly string[]; readonly timeout_s: number } | undefined;
  readonly call: { readonly rpc_method: string | null; readonly a2a_operation: string | null; readonly operation_id: string | null } | undefined;
  readonly steps: readonly ExplainStep[];
}

export function explainCall(policy: Policy, labels: LabelIndex, apiName: string, request: ApiRequest): Explanation {
  const method = request.method.toUpperCase();
  const base = { api: apiName, method, path: request.path };
  let verdict: Explanation["verdict"];
  let reason: string | undefined;
  let gateRule: CompiledRule["gate"] | null = null;
  try {
    const judged = judgeRequest(policy, labels, apiName, request);
    gateRule = judged.gate;
    verdict = judged.gate ? "gated" : "sent";
  } catch (error) {
    if (!hasCode(error, "api_policy")) throw error;
    verdict = "refused";
    reason = (error as Error).message;
  }
  const api = policy.apis.get(apiName);
  const call = api ? describe(api, request) : undefined;
  const steps = api && call ? walk(api, call, labels) : [];
  const gate = gateRule
    ? { rule: `approval[${gateRule.rule}]`, approvers: gateRule.approvers, decide_with: gateRule.decideWith, relayers: gateRule.relayers, timeout_s: gateRule.timeoutS }
    : undefined;
  return {
    ...base,
    verdict,
    reason,
    gate,
    call: call && { rpc_method: call.rpcMethod ?? null, a2a_operation: call.a2aOperation ?? null, operation_id: call.operationId ?? null },
    steps,
  };
}

/** The call as the judge sees it, or undefined when the request is refused before it is judged (path, body). */
function describe(api: ApiPolicy, request: ApiRequest): JudgedCall | undefined {
  try {
    const { segments } = resolvePath(request.path, request.pathParams);
    let rpcMethod: string | undefined;
    let a2aOperation: "approve" | "reject" | undefined;
    if (api.protocol !== "http") {
      const reading = readRpcCall(api.protocol, request.method.toUpperCase(), request.body);
      if (!reading.ok) return undefined;
      rpcMethod = reading.rpcMethod;
      a2aOperation = reading.a2aOperation;
    }
    return describeSegments(request.method, segments, { operationId: request.operationId, rpcMethod, a2aOperation });
  } catch {
    return undefined;
  }
}

function walk(api: ApiPolicy, call: JudgedCall, labels: LabelIndex): ExplainStep[] {
  const steps: ExplainStep[] = [];
  if (call.operationId !== undefined && !labels.fits(api.name, call))
    steps.push({ place: "operationId", outcome: "refuses", detail: `${call.operationId} stands for another method or path in the policy or the API's OpenAPI file` });
  const methods = [...api.allowedMethods].join(", ");
  if (!api.allowedMethods.has(call.method)) {
    steps.push({ place: "allowed_methods", outcome: "refuses", detail: `${call.method} is not in [${methods}]` });
    return steps;
  }
  steps.push({ place: "allowed_methods", outcome: "passes", detail: `${call.method} is in [${methods}]` });
  const denial = api.denied.findIndex((e) => covers(e, call));
  if (denial >= 0) {
    steps.push({ place: `denied_operations[${denial}]`, outcome: "refuses", detail: `${entryText(api.denied[denial]!)} covers the call; denials always win` });
    return steps;
  }
  steps.push({ place: "denied_operations", outcome: "passes", detail: api.denied.length === 0 ? "none" : `none of ${api.denied.length} covers the call` });
  if (api.allowed === undefined) steps.push({ place: "allowed_operations", outcome: "skipped", detail: "absent: every call the methods allow" });
  else {
    const allow = api.allowed.findIndex((e) => matches(e, call));
    if (allow < 0) {
      steps.push({ place: "allowed_operations", outcome: "refuses", detail: `none of ${api.allowed.length} entries matches (every field an entry pins must match the call)` });
      return steps;
    }
    steps.push({ place: `allowed_operations[${allow}]`, outcome: "matches", detail: entryText(api.allowed[allow]!) });
  }
  const gating = api.rules.map((r, i) => [r, i] as const).filter(([r]) => ruleCovers(r, call));
  if (gating.length === 0) steps.push({ place: "approval", outcome: "passes", detail: api.rules.length === 0 ? "no approval rules" : "no rule covers the call: sent without asking" });
  for (const [rule, i] of gating) {
    const differs = gating[0]![0].gate.key !== rule.gate.key;
    steps.push({
      place: `approval[${i}]`,
      outcome: differs ? "refuses" : "gates",
      detail: `${ruleText(rule)}${differs ? `; decides unlike approval[${gating[0]![1]}], so the call is refused` : i === gating[0]![1] ? "" : "; decides alike"}`,
    });
  }
  return steps;
}

function entryText(e: CompiledEntry): string {
  const parts: string[] = [];
  if (e.operationId !== undefined) parts.push(`operationId: ${e.operationId}`);
  if (e.path !== undefined) parts.push(`path: ${e.path.source}`);
  if (e.methods !== undefined) parts.push(`methods: [${[...e.methods].join(", ")}]`);
  if (e.rpcMethod !== undefined) parts.push(`rpc_method: ${e.rpcMethod}`);
  if (e.a2aOperation !== undefined) parts.push(`a2a_operation: ${e.a2aOperation}`);
  return `{${parts.join(", ")}}`;
}

function ruleText(rule: CompiledRule): string {
  const g = rule.gate;
  const methods = rule.methods === undefined ? "" : rule.methods === "*" ? "methods [*]" : `methods [${[...rule.methods].join(", ")}]`;
  const ops = rule.operations.length > 0 ? `operations ${rule.operations.map(entryText).join(", ")}` : "";
  return `required_for ${[methods, ops].filter(Boolean).join(" and ")}: approvers ${g.approvers.join(", ")}, decide_with ${g.decideWith}${g.relayers.length ? ` (relayers ${g.relayers.join(", ")})` : ""}, timeout ${g.timeoutS} s`;
}

/** The call's path and query split (`/orders?limit=5`), the query as the policy client takes it. */
export function splitTarget(target: string): { path: string; query: Record<string, string | string[]> | undefined } {
  const i = target.indexOf("?");
  if (i < 0) return { path: target, query: undefined };
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(target.slice(i + 1))) {
    const prev = query[k];
    query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return { path: target.slice(0, i), query };
}

export type { JsonValue };
