/// <reference types="node" />
/**
 * `agentcli policy explain API METHOD PATH [--body JSON] [--operation-id ID] [--policy FILE]`:
 * the API policy read as the service reads it (the document, the APIs' OpenAPI files for the
 * operation labels; relative to the working directory, the project root) and one call explained
 * by the service's own judge. Exit 0 when the policy lets the call through (at once or once
 * approved), 1 when it refuses it, 3 when the policy itself has problems.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { JsonValue } from "../json.js";
import { loadPolicy, type PolicyProblem } from "../policy/document.js";
import { buildLabelIndex, type OpenApiOperation } from "../policy/labels.js";
import { parseOpenApi } from "../policy/openapi.js";
import { explainCall, splitTarget } from "../tooling/policy-explain.js";
import { hasCode } from "../errors.js";
import { errnoCode } from "../files.js";
import { UsageError } from "./args.js";
import { safeLine } from "./escape.js";
import type { Printer } from "./output.js";

export interface ExplainArgs {
  readonly api: string;
  readonly method: string;
  readonly target: string;
  readonly body: string | undefined;
  readonly operationId: string | undefined;
  readonly policy: string | undefined;
}

/** The file's text, undefined when there is none, or why it cannot be read (its errno code). */
function readText(path: string): string | undefined | { readonly unreadable: string } {
  try {
    return readFileSync(resolve(path), "utf8");
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return undefined;
    return { unreadable: `cannot be read (${code})` };
  }
}

export function explain(p: Printer, args: ExplainArgs): number {
  let body: JsonValue | undefined;
  if (args.body !== undefined) {
    try {
      body = JSON.parse(args.body) as JsonValue;
    } catch {
      throw new UsageError("--body must be JSON");
    }
  }
  const path = args.policy ?? process.env.API_POLICY_PATH ?? "api-policy.yaml";
  const problems = (list: readonly PolicyProblem[]) => {
    for (const pr of list) process.stderr.write(`${safeLine(pr.place)}: ${safeLine(pr.message)}\n`);
    p.error(`the API policy ${safeLine(path)} has ${list.length} problem${list.length === 1 ? "" : "s"}`);
    return 3;
  };
  const text = readText(path);
  if (text === undefined) return problems([{ place: path, message: "there is no such file (without a policy every outbound call is refused)" }]);
  if (typeof text !== "string") return problems([{ place: path, message: text.unreadable }]);
  let policy;
  try {
    policy = loadPolicy(text, path);
  } catch (error) {
    if (hasCode(error, "invalid_policy")) return problems((error as { problems: PolicyProblem[] }).problems);
    throw error;
  }
  const openapi = new Map<string, readonly OpenApiOperation[]>();
  const bad: PolicyProblem[] = [];
  for (const [name, api] of policy.apis) {
    if (!api.openapi) continue;
    const doc = readText(api.openapi);
    if (doc === undefined) bad.push({ place: `apis.${name}.openapi`, message: "names a file that does not exist" });
    else if (typeof doc !== "string") bad.push({ place: `apis.${name}.openapi`, message: `names a file that ${doc.unreadable}` });
    else
      try {
        openapi.set(name, parseOpenApi(doc).operations);
      } catch (error) {
        bad.push({ place: `apis.${name}.openapi`, message: (error as Error).message });
      }
  }
  if (bad.length > 0) return problems(bad);

  const { path: callPath, query } = splitTarget(args.target);
  const e = explainCall(policy, buildLabelIndex(policy, openapi), args.api, {
    method: args.method,
    path: callPath,
    ...(query ? { query } : {}),
    ...(body !== undefined ? { body } : {}),
    ...(args.operationId !== undefined ? { operationId: args.operationId } : {}),
  });
  p.record(e);
  const lines = [`${e.method} ${e.path} on API ${e.api}${e.call?.rpc_method ? ` (rpc ${e.call.rpc_method}${e.call.a2a_operation ? `, ${e.call.a2a_operation}` : ""})` : ""}`];
  for (const s of e.steps) lines.push(`  ${s.place}: ${s.outcome} - ${s.detail}`);
  if (e.verdict === "refused") lines.push(`refused: ${e.reason ?? ""}`);
  else if (e.gate) lines.push(`gated by ${e.gate.rule}: held until ${e.gate.approvers.join(" or ")} approves${e.gate.decide_with === "relayed" ? ` (relayed by ${e.gate.relayers.join(", ")})` : ""}; expires after ${e.gate.timeout_s} s`);
  else lines.push("allowed: sent without asking");
  p.text(`${lines.map(safeLine).join("\n")}\n`);
  return e.verdict === "refused" ? 1 : 0;
}
