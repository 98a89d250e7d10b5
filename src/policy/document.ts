/**
 * Loads and checks the outbound API policy document (spec 2.6, 2.7, 7.5): YAML with repeated
 * keys refused, the zod schema for each API, then the rules between fields. Every problem is
 * reported at once with its place (`apis.<name>.<key>`). A problem is a configuration error
 * (PolicyError, exit code 3 in tooling), never a refused call. The result is compiled for the
 * judge: methods as sets, path templates split and normalized once.
 */
import { type Document, isPair, isScalar, isSeq, LineCounter, parseDocument, visit } from "yaml";
import type { z } from "zod";
import { AppError } from "../errors.js";
import { valueAt } from "../json.js";
import { type CompiledTemplate, compileTemplate, pathProblem } from "./paths.js";
import { API_NAME, type ApiInput, apiSchema, documentSchema, HTTP_METHODS, type OperationEntry, RELAYER } from "./schema.js";

export interface PolicyProblem {
  readonly place: string;
  readonly message: string;
}

export class PolicyError extends AppError {
  readonly problems: readonly PolicyProblem[];
  constructor(problems: readonly PolicyProblem[]) {
    super("invalid_policy", `Invalid API policy (${problems.length}): ${problems.map((p) => `${p.place} ${p.message}`).join("; ")}`);
    this.name = "PolicyError";
    this.problems = problems;
  }
}

export interface CompiledEntry {
  readonly operationId: string | undefined;
  readonly path: CompiledTemplate | undefined;
  readonly methods: ReadonlySet<string> | undefined;
  readonly rpcMethod: string | undefined;
  readonly a2aOperation: "approve" | "reject" | undefined;
}

export interface Gate {
  /** Index of the rule in file order. */
  readonly rule: number;
  readonly approvers: readonly string[];
  readonly timeoutS: number;
  readonly decideWith: "direct" | "relayed";
  readonly relayers: readonly string[];
  /** Equal for rules that decide alike (same approvers, decide_with and relayers). */
  readonly key: string;
}

export interface CompiledRule {
  readonly methods: ReadonlySet<string> | "*" | undefined;
  readonly operations: readonly CompiledEntry[];
  readonly gate: Gate;
}

export interface ApiPolicy {
  readonly name: string;
  readonly description: string | undefined;
  readonly protocol: "http" | "jsonrpc" | "a2a";
  readonly a2aPath: string | undefined;
  readonly baseUrlEnv: string;
  readonly auth: "none" | "bearer" | "forward" | "exchange";
  readonly tokenEnv: string | undefined;
  readonly forwardHeader: string;
  readonly forwardAudience: string | undefined;
  readonly exchange: { audience: string; scope?: string; resource?: string; allow_actorless: boolean } | undefined;
  readonly allowedMethods: ReadonlySet<string>;
  readonly allowed: readonly CompiledEntry[] | undefined;
  readonly denied: readonly CompiledEntry[];
  readonly openapi: string | undefined;
  readonly timeouts: { readonly connect: number; readonly read: number };
  readonly pagination: { readonly param: string; readonly max: number } | undefined;
  readonly limits: { readonly maxCallsPerRun?: number; readonly ratePerMinute?: number; readonly maxResponseBytes?: number };
  readonly rules: readonly CompiledRule[];
}

export interface Policy {
  readonly apis: ReadonlyMap<string, ApiPolicy>;
}

const JSONRPC_METHODS = new Set(["GET", "POST", "HEAD"]);
const READ_ONLY = ["GET", "HEAD"];
const READ_WRITE = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/** A2A 0.3 method names, refused in the policy (write the 1.0 name). */
export const A2A_V03_TO_V10: Readonly<Record<string, string>> = {
  "message/send": "SendMessage",
  "message/stream": "SendStreamingMessage",
  "tasks/get": "GetTask",
  "tasks/list": "ListTasks",
  "tasks/cancel": "CancelTask",
  "tasks/resubscribe": "SubscribeToTask",
  "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
  "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
  "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfig",
  "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
  "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
};
const A2A_SEND = new Set(["SendMessage", "SendStreamingMessage"]);

/**
 * Parses and checks a policy document; throws PolicyError listing every problem. `source` (the
 * file's path) names where a YAML syntax error is.
 */
export function loadPolicy(text: string, source?: string): Policy {
  const problems: PolicyProblem[] = [];
  const yaml = readYaml(text, source);
  if (!yaml.ok) throw new PolicyError(yaml.problems);
  const raw = yaml.value;

  const top = documentSchema.safeParse(raw);
  if (!top.success) throw new PolicyError(zodProblems(top.error, "", raw));

  const apis = new Map<string, ApiPolicy>();
  for (const [name, value] of Object.entries(top.data.apis)) {
    const place = `apis.${name}`;
    if (!API_NAME.test(name)) {
      problems.push({ place, message: "API names must match ^[a-z][a-z0-9_]{0,31}$" });
      continue;
    }
    const parsed = apiSchema.safeParse(value);
    if (!parsed.success) {
      problems.push(...zodProblems(parsed.error, place, value));
      // Still check the rules between the keys that are fine, so every problem shows at once.
      const known = new Set(problems.map((p) => p.place));
      const more: PolicyProblem[] = [];
      checkApi(validKeys(value), place, more);
      problems.push(...more.filter((p) => !known.has(p.place)));
      continue;
    }
    const before = problems.length;
    checkApi(parsed.data, place, problems);
    if (problems.length === before) apis.set(name, compileApi(name, parsed.data));
  }
  if (problems.length > 0) throw new PolicyError(problems);
  return { apis };
}

/** The keys of an API mapping that pass their own schema (defaults applied), for checking what else is wrong. */
function validKeys(value: unknown): ApiInput {
  const out: Record<string, unknown> = {};
  if (typeof value !== "object" || value === null) return out as ApiInput;
  for (const [key, schema] of Object.entries(apiSchema.shape)) {
    const r = (schema as z.ZodType).safeParse((value as Record<string, unknown>)[key]);
    if (r.success && r.data !== undefined) out[key] = r.data;
  }
  return out as ApiInput;
}

function checkApi(api: ApiInput, place: string, problems: PolicyProblem[]): void {
  const add = (key: string, message: string) => problems.push({ place: `${place}.${key}`, message });
  const rpc = api.protocol !== "http";

  if (api.protocol === "a2a") {
    if (!api.a2a) add("a2a", "is required with protocol a2a");
    else {
      const p = api.a2a.path;
      if (p === "") add("a2a.path", "must not be empty");
      else if (p.includes("{") || p.includes("}")) add("a2a.path", "must be a literal path (no {placeholders})");
      else {
        const bad = pathProblem(p, "concrete");
        if (bad) add("a2a.path", bad);
      }
    }
    if (api.auth === "none") add("auth", "none is refused with protocol a2a");
  } else if (api.a2a) add("a2a", "is only valid with protocol a2a");

  if (api.auth === "bearer" && !api.token_env) add("token_env", "is required with auth bearer");
  if (api.auth !== "bearer" && api.token_env) add("token_env", "is only valid with auth bearer");
  if (api.forward_header && api.auth !== "forward" && api.auth !== "exchange") add("forward_header", "is only valid with auth forward or exchange");
  if (api.forward_audience && api.auth !== "forward") add("forward_audience", "is only valid with auth forward");
  if (api.auth === "exchange" && !api.exchange) add("exchange", "is required with auth exchange");
  if (api.auth !== "exchange" && api.exchange) add("exchange", "is only valid with auth exchange");

  const methods = api.allowed_methods === undefined ? [] : allowedMethodList(api.allowed_methods);
  if (rpc && api.allowed_methods !== undefined) {
    if (api.allowed_methods === "read-write" || (Array.isArray(api.allowed_methods) && api.allowed_methods[0] === "*"))
      add("allowed_methods", "JSON-RPC APIs allow GET, POST, HEAD only");
    else if (methods.some((m) => !JSONRPC_METHODS.has(m))) add("allowed_methods", "JSON-RPC APIs allow GET, POST, HEAD only");
  }

  const entries = (key: string, list: readonly OperationEntry[] | undefined) =>
    list?.forEach((entry, i) => checkEntry(entry, `${key}[${i}]`, api.protocol, add));
  entries("allowed_operations", api.allowed_operations);
  entries("denied_operations", api.denied_operations);

  const rules = api.approval === undefined ? [] : Array.isArray(api.approval) ? api.approval : [api.approval];
  const single = !Array.isArray(api.approval);
  rules.forEach((rule, i) => {
    const at = single ? "approval" : `approval[${i}]`;
    if (!rule.required_for || (rule.required_for.methods === undefined && rule.required_for.operations === undefined))
      add(`${at}.required_for`, "needs methods and/or operations");
    rule.required_for?.operations?.forEach((entry, j) => checkEntry(entry, `${at}.required_for.operations[${j}]`, api.protocol, add));
    const decide = rule.decide_with;
    if (decide === "step_up") add(`${at}.decide_with`, "step_up is reserved and not supported");
    else if (decide !== "direct" && decide !== "relayed") add(`${at}.decide_with`, "must be direct or relayed");
    if (decide === "relayed") {
      if (!rule.approvers?.includes("requester")) add(`${at}.approvers`, "must include requester with decide_with relayed");
      if (rule.relayers === undefined) add(`${at}.relayers`, "is required with decide_with relayed");
      else if (rule.relayers.length === 0) add(`${at}.relayers`, "must not be empty");
      else if (rule.relayers.some((r) => !RELAYER.test(r)))
        add(`${at}.relayers`, "must be agent ids of 1-256 characters without spaces, commas or control characters");
    } else if (rule.relayers !== undefined) add(`${at}.relayers`, "is only valid with decide_with relayed");
  });

  if (api.protocol === "a2a" && api.allowed_methods !== undefined && maySendMessage(api, methods) && !approveGatedOrDenied(api, rules))
    add("approval", "an A2A API that may send messages must gate a2a_operation approve (or deny it)");
}

function checkEntry(entry: OperationEntry, at: string, protocol: ApiInput["protocol"], add: (key: string, message: string) => void): void {
  const rpc = protocol !== "http";
  if (entry.path !== undefined) {
    const bad = pathProblem(entry.path, "template");
    if (bad) add(`${at}.path`, bad);
  }
  if (entry.rpc_method !== undefined) {
    if (!rpc) add(`${at}.rpc_method`, "is only valid on jsonrpc or a2a APIs");
    else if (protocol === "a2a" && A2A_V03_TO_V10[entry.rpc_method])
      add(`${at}.rpc_method`, `is an A2A 0.3 name; write the 1.0 name ${A2A_V03_TO_V10[entry.rpc_method]}`);
  }
  if (entry.a2a_operation !== undefined) {
    if (protocol !== "a2a") add(`${at}.a2a_operation`, "is only valid with protocol a2a");
    else if (entry.rpc_method !== undefined && !A2A_SEND.has(entry.rpc_method))
      add(`${at}.a2a_operation`, "goes only with rpc_method SendMessage or SendStreamingMessage");
  }
  const names = entry.operationId !== undefined || entry.path !== undefined || (rpc && (entry.rpc_method !== undefined || entry.a2a_operation !== undefined));
  if (!names) add(at, rpc ? "needs operationId, path, rpc_method or a2a_operation" : "needs operationId or path");
}

function allowedMethodList(value: ApiInput["allowed_methods"]): string[] {
  if (value === "read-only") return READ_ONLY;
  if (value === "read-write") return READ_WRITE;
  if (value[0] === "*") return [...HTTP_METHODS];
  return value as string[];
}

function maySendMessage(api: ApiInput, methods: readonly string[]): boolean {
  if (!methods.includes("POST")) return false;
  if (!api.allowed_operations) return true;
  return api.allowed_operations.some(
    (e) => (e.methods === undefined || e.methods.includes("POST")) && (e.rpc_method === undefined || A2A_SEND.has(e.rpc_method)) && e.a2a_operation !== "reject",
  );
}

function approveGatedOrDenied(api: ApiInput, rules: readonly z.output<typeof apiSchema>["approval"][] | readonly unknown[]): boolean {
  const gated = (rules as { required_for?: { methods?: readonly string[]; operations?: readonly OperationEntry[] } }[]).some(
    (r) =>
      r.required_for?.methods?.some((m) => m === "*" || m === "POST") ||
      r.required_for?.operations?.some((e) => e.a2a_operation === "approve" && e.rpc_method === undefined && e.path === undefined && e.operationId === undefined && (e.methods === undefined || e.methods.includes("POST"))),
  );
  if (gated) return true;
  const denials = api.denied_operations ?? [];
  // Only a denial that covers every approve message counts: no path or operationId narrowing it.
  const broad = (e: OperationEntry) => e.path === undefined && e.operationId === undefined && (e.methods === undefined || e.methods.includes("POST"));
  const deniesApprove = denials.some((e) => e.a2a_operation === "approve" && e.rpc_method === undefined && broad(e));
  const deniesSends = [...A2A_SEND].every((m) => denials.some((e) => e.rpc_method === m && e.a2a_operation === undefined && broad(e)));
  return deniesApprove || deniesSends;
}

function compileEntry(e: OperationEntry): CompiledEntry {
  return {
    operationId: e.operationId,
    path: e.path === undefined ? undefined : compileTemplate(e.path),
    methods: e.methods === undefined ? undefined : new Set(e.methods),
    rpcMethod: e.rpc_method,
    a2aOperation: e.a2a_operation,
  };
}

function compileApi(name: string, api: ApiInput): ApiPolicy {
  const rules = api.approval === undefined ? [] : Array.isArray(api.approval) ? api.approval : [api.approval];
  return {
    name,
    description: api.description,
    protocol: api.protocol,
    a2aPath: api.a2a?.path,
    baseUrlEnv: api.base_url_env,
    auth: api.auth,
    tokenEnv: api.token_env,
    forwardHeader: api.forward_header ?? "Authorization",
    forwardAudience: api.forward_audience,
    exchange: api.exchange,
    allowedMethods: new Set(allowedMethodList(api.allowed_methods)),
    allowed: api.allowed_operations?.map(compileEntry),
    denied: (api.denied_operations ?? []).map(compileEntry),
    openapi: api.openapi,
    timeouts: { connect: api.timeouts_ms?.connect ?? 2000, read: api.timeouts_ms?.read ?? 5000 },
    pagination: api.pagination && { param: api.pagination.page_size_param, max: api.pagination.max_page_size },
    limits: {
      ...(api.limits?.max_calls_per_run !== undefined ? { maxCallsPerRun: api.limits.max_calls_per_run } : {}),
      ...(api.limits?.rate_per_minute !== undefined ? { ratePerMinute: api.limits.rate_per_minute } : {}),
      ...(api.limits?.max_response_bytes !== undefined ? { maxResponseBytes: api.limits.max_response_bytes } : {}),
    },
    rules: rules.map((r, i) => {
      const approvers = [...(r.approvers ?? [])].sort();
      const relayers = [...(r.relayers ?? [])].sort();
      const decideWith = r.decide_with === "relayed" ? "relayed" : "direct";
      const methods = r.required_for?.methods;
      return {
        methods: methods === undefined ? undefined : methods[0] === "*" ? "*" : new Set(methods as string[]),
        operations: (r.required_for?.operations ?? []).map(compileEntry),
        gate: { rule: i, approvers, timeoutS: r.timeout_s ?? 900, decideWith, relayers, key: JSON.stringify([approvers, decideWith, relayers]) },
      };
    }),
  };
}

/**
 * A YAML configuration text as plain data, repeated keys refused (placed at the key), merge keys
 * and more than 100 aliases refused; syntax errors name their line (and `source`, the file). The
 * system file's loader reads its YAML through this too.
 */
export function readYaml(text: string, source?: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problems: PolicyProblem[] } {
  const problems: PolicyProblem[] = [];
  const lines = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, merge: false, lineCounter: lines });
  for (const e of doc.errors) {
    const line = e.pos ? lines.linePos(e.pos[0]).line : undefined;
    const at = line ? `line ${line}` : "document";
    if (e.code === "DUPLICATE_KEY" && e.pos) problems.push({ place: placeOfKey(doc, e.pos[0]) ?? at, message: `repeats a key (${at})` });
    else problems.push({ place: source ? `${source} ${at}` : at, message: `is not valid YAML: ${e.message}` });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: doc.toJS({ maxAliasCount: 100 }) };
}

/** The dotted place of the map key that starts at `offset` (`apis.orders.auth`), list items by index. */
function placeOfKey(doc: Document, offset: number): string | undefined {
  let place: string | undefined;
  visit(doc, {
    Pair(_, pair, path) {
      const key = pair.key;
      if (!isScalar(key) || key.range?.[0] !== offset) return undefined;
      const parts: string[] = [];
      path.forEach((node, i) => {
        if (isPair(node) && isScalar(node.key)) parts.push(String(node.key.value));
        else if (isSeq(node)) parts.push(String(node.items.indexOf((path[i + 1] ?? pair) as never)));
      });
      place = [...parts, String(key.value)].join(".");
      return visit.BREAK;
    },
  });
  return place;
}

/** Zod issues as placed problems (`base.key[0].key`); the system file's loader reads its issues through this too. */
export function zodProblems(error: z.ZodError, base: string, root: unknown): PolicyProblem[] {
  return error.issues.flatMap((issue): PolicyProblem[] => {
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      // Report the branch that got furthest (a rule rather than "not a rule or a list").
      const best = issue.errors.reduce((a, b) => (depth(b) > depth(a) ? b : a));
      if (depth(best) > 0 && issue.errors.every((b) => b === best || depth(b) < depth(best)))
        return zodProblems({ issues: best.map((i) => ({ ...i, path: [...issue.path, ...i.path] })) } as unknown as z.ZodError, base, root);
    }
    const place = [base, ...issue.path.map((p) => (typeof p === "number" ? `[${p}]` : String(p)))]
      .filter((p) => p !== "")
      .join(".")
      .replace(/\.\[/g, "[");
    // A mapping key that breaks its own rule (the system file's agent names): the key's rule says why.
    if (issue.code === "invalid_key") return [{ place: place || "document", message: issue.issues[0]?.message ?? issue.message }];
    if (issue.code === "unrecognized_keys") return [{ place: place || "document", message: `has unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}` }];
    if (issue.code === "invalid_type" && valueAt(root, issue.path) === undefined) return [{ place: place || "document", message: "is required" }];
    return [{ place: place || "document", message: issue.message }];
  });
}

function depth(issues: readonly z.core.$ZodIssue[]): number {
  return Math.max(0, ...issues.map((i) => i.path.length));
}
