/**
 * Operation labels: where the policy or an API's OpenAPI file says which method and path an
 * `operationId` stands for, a call naming that label must be that request (spec 7.4).
 */
import type { Policy } from "./document.js";
import type { JudgedCall } from "./judge.js";
import { type CompiledTemplate, compileTemplate, matchesStrict } from "./paths.js";

interface Target {
  readonly methods: ReadonlySet<string> | undefined;
  readonly path: CompiledTemplate | undefined;
}

export interface LabelIndex {
  /** False when the label is known and no known meaning of it matches the call. */
  fits(api: string, call: JudgedCall): boolean;
}

export interface OpenApiOperation {
  readonly operationId: string | undefined;
  readonly method: string;
  readonly path: string;
}

export function buildLabelIndex(policy: Policy, openapi: ReadonlyMap<string, readonly OpenApiOperation[]>): LabelIndex {
  const index = new Map<string, Map<string, Target[]>>();
  const add = (api: string, label: string, target: Target) => {
    if (target.methods === undefined && target.path === undefined) return;
    let labels = index.get(api);
    if (!labels) index.set(api, (labels = new Map()));
    const list = labels.get(label) ?? [];
    list.push(target);
    labels.set(label, list);
  };
  for (const [name, api] of policy.apis) {
    const entries = [...(api.allowed ?? []), ...api.denied, ...api.rules.flatMap((r) => r.operations)];
    for (const e of entries) if (e.operationId !== undefined) add(name, e.operationId, { methods: e.methods, path: e.path });
    for (const op of openapi.get(name) ?? [])
      if (op.operationId !== undefined) add(name, op.operationId, { methods: new Set([op.method]), path: compileTemplate(op.path) });
  }
  return {
    fits(api, call) {
      const targets = call.operationId === undefined ? undefined : index.get(api)?.get(call.operationId);
      if (!targets) return true;
      return targets.some((t) => (t.methods === undefined || t.methods.has(call.method)) && (t.path === undefined || matchesStrict(t.path, call.segments)));
    },
  };
}
