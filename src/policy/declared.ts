/**
 * Declared calls (spec 2.8): each tool's `calls` list, checked against the policy (and an API's
 * OpenAPI file) at startup and by `npm run policy:check`, so a tool that could never make its
 * call is found before a model tries.
 */
import type { Policy } from "./document.js";
import { describeCall, judge } from "./judge.js";
import type { LabelIndex, OpenApiOperation } from "./labels.js";
import { compileTemplate, matchesStrict, pathProblem } from "./paths.js";
import type { PolicyProblem } from "./document.js";
import type { DeclaredCall } from "./types.js";

export interface DeclaringTool {
  readonly name: string;
  readonly calls: readonly DeclaredCall[];
}

export function checkDeclaredCalls(
  tools: readonly DeclaringTool[],
  policy: Policy | undefined,
  labels: LabelIndex | undefined,
  openapi: ReadonlyMap<string, readonly OpenApiOperation[]>,
): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  for (const tool of tools) {
    tool.calls.forEach((decl, i) => {
      const place = `tools.${tool.name}.calls[${i}]`;
      const add = (message: string) => problems.push({ place, message });
      const api = policy?.apis.get(decl.api);
      if (!api) return add(`names API ${decl.api}, which the policy does not have`);
      const method = String(decl.method ?? "").toUpperCase();
      if (!/^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$/.test(method)) return add("has no valid method");
      if (decl.operation_id === undefined && decl.path === undefined) return add("needs operation_id and/or path");
      const rpcApi = api.protocol !== "http";
      if (decl.rpc_method !== undefined && (!rpcApi || method === "GET" || method === "HEAD"))
        return add("rpc_method is only for POST calls to jsonrpc or a2a APIs");
      if (rpcApi && method === "POST" && decl.rpc_method === undefined) return add("a POST to a jsonrpc or a2a API must declare rpc_method");
      if (decl.a2a_operation !== undefined && api.protocol !== "a2a") return add("a2a_operation is only for a2a APIs");
      if (decl.path !== undefined) {
        const bad = pathProblem(decl.path, "template");
        if (bad) return add(`path ${bad}`);
      }
      // Judge the declared call with its placeholders standing as one segment each.
      const path = decl.path ?? pathForOperation(openapi.get(api.name), decl.operation_id, method) ?? "/";
      const call = describeCall(method, path, { operationId: decl.operation_id, rpcMethod: decl.rpc_method, a2aOperation: decl.a2a_operation });
      if (decl.path !== undefined && labels && !labels.fits(api.name, call)) return add(`operation_id ${decl.operation_id} does not match its method and path`);
      const verdict = judge(api, call);
      if (!verdict.allowed) return add(`is refused by the policy: ${verdict.reason}`);
      const ops = openapi.get(api.name);
      if (ops) {
        const found = ops.some(
          (op) =>
            op.method === method &&
            (decl.operation_id === undefined || op.operationId === decl.operation_id) &&
            (decl.path === undefined || matchesStrict(compileTemplate(op.path), call.segments)),
        );
        if (!found) add(`is not an operation of API ${api.name}'s OpenAPI file`);
      }
    });
  }
  return problems;
}

function pathForOperation(ops: readonly OpenApiOperation[] | undefined, operationId: string | undefined, method: string): string | undefined {
  return ops?.find((op) => op.operationId === operationId && op.method === method)?.path;
}
