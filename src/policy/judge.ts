/**
 * The judge (spec 8, "How a call is judged"): a pure function of an API's compiled policy and one
 * described call. Order: method allow-list, denials (always win), allowed operations, then which
 * approval rule gates the call. Fails closed: a denial or gate that knows an operation by its
 * operationId covers a call that names none.
 */
import type { ApiPolicy, CompiledEntry, CompiledRule, Gate } from "./document.js";
import { concreteSegments, matchesLoose, matchesStrict } from "./paths.js";

export interface JudgedCall {
  /** Upper case. */
  readonly method: string;
  /** Normalized segments of the concrete path, and the same in lower case. */
  readonly segments: readonly string[];
  readonly lowered: readonly string[];
  readonly operationId: string | undefined;
  readonly rpcMethod: string | undefined;
  readonly a2aOperation: "approve" | "reject" | undefined;
}

export type Verdict = { readonly allowed: true; readonly gate: Gate | null } | { readonly allowed: false; readonly reason: string };

/** Describes a call whose path has already passed `pathProblem(path, "concrete")`. */
export function describeCall(
  method: string,
  path: string,
  labels: { operationId?: string | undefined; rpcMethod?: string | undefined; a2aOperation?: "approve" | "reject" | undefined } = {},
): JudgedCall {
  return describeSegments(method, concreteSegments(path), labels);
}

/** Describes a call from its already-normalized segments (the client has them from the template). */
export function describeSegments(
  method: string,
  segments: readonly string[],
  labels: { operationId?: string | undefined; rpcMethod?: string | undefined; a2aOperation?: "approve" | "reject" | undefined } = {},
): JudgedCall {
  return new Described(method.toUpperCase(), segments, labels.operationId, labels.rpcMethod, labels.a2aOperation);
}

/** Lower-cases the segments only when a denial or gate asks (allow-only APIs never do). */
class Described implements JudgedCall {
  private low: readonly string[] | undefined;
  constructor(
    readonly method: string,
    readonly segments: readonly string[],
    readonly operationId: string | undefined,
    readonly rpcMethod: string | undefined,
    readonly a2aOperation: "approve" | "reject" | undefined,
  ) {}
  get lowered(): readonly string[] {
    return (this.low ??= this.segments.map((s) => s.toLowerCase()));
  }
}

/** Denial and gate coverage. */
export function covers(e: CompiledEntry, c: JudgedCall): boolean {
  if (e.methods !== undefined && !e.methods.has(c.method)) return false;
  if (e.rpcMethod !== undefined && c.rpcMethod !== e.rpcMethod) return false;
  if (e.a2aOperation !== undefined && c.a2aOperation !== e.a2aOperation) return false;
  if (e.path === undefined && e.operationId === undefined) return true;
  if (e.path !== undefined && matchesLoose(e.path, c.lowered)) return true;
  if (e.operationId !== undefined) {
    // A call that does not say which operation it is cannot prove it is not this one.
    if (c.operationId === undefined) return e.path === undefined;
    return c.operationId === e.operationId;
  }
  return false;
}

/** Allow-list matching: every pinned field must match exactly; an unnamed pinned field does not. */
export function matches(e: CompiledEntry, c: JudgedCall): boolean {
  if (e.methods !== undefined && !e.methods.has(c.method)) return false;
  if (e.operationId !== undefined && c.operationId !== e.operationId) return false;
  if (e.path !== undefined && !matchesStrict(e.path, c.segments)) return false;
  if (e.rpcMethod !== undefined && c.rpcMethod !== e.rpcMethod) return false;
  if (e.a2aOperation !== undefined && c.a2aOperation !== e.a2aOperation) return false;
  return true;
}

export function ruleCovers(rule: CompiledRule, c: JudgedCall): boolean {
  if (rule.methods === "*" || rule.methods?.has(c.method)) return true;
  for (const e of rule.operations) if (covers(e, c)) return true;
  return false;
}

export function judge(api: ApiPolicy, c: JudgedCall): Verdict {
  if (!api.allowedMethods.has(c.method)) return refuse(`method ${c.method} is not in allowed_methods of API ${api.name}`);
  for (const e of api.denied) if (covers(e, c)) return refuse(`the call is denied by denied_operations of API ${api.name}`);
  if (api.allowed !== undefined) {
    let found = false;
    for (const e of api.allowed)
      if (matches(e, c)) {
        found = true;
        break;
      }
    if (!found) return refuse(`the call is not in allowed_operations of API ${api.name}`);
  }
  let gate: Gate | null = null;
  for (const rule of api.rules) {
    if (!ruleCovers(rule, c)) continue;
    if (gate === null) gate = rule.gate;
    else if (gate.key !== rule.gate.key)
      return refuse(`the call matches approval rules of API ${api.name} with different approvers or decide_with`);
  }
  return { allowed: true, gate };
}

function refuse(reason: string): Verdict {
  return { allowed: false, reason };
}
