/**
 * The `protocol: a2a` policy entries a system's edges need (spec 2.6, 2.9; CONTRACT 6): for each
 * agent an agent calls, one API named after the callee (so the caller's model gets `ask_<callee>`,
 * and `status_`/`cancel_` where the edge's `calls` name them), with the edge's auth, its calls as
 * the JSON-RPC methods allowed, and its approvals: `relay` gates the approve messages (the person
 * at the caller decides the callee's relayed approvals, rejects go through), `deny` refuses every
 * decision message (the person decides at the callee). The entries are merged into the project's
 * own policy document; a name both define is a problem, never silently overwritten.
 */
import { isMap, parseDocument, stringify } from "yaml";
import type { JsonValue } from "../../json.js";
import { loadPolicy, type PolicyProblem } from "../../policy/document.js";
import { hasCode } from "../../errors.js";
import type { System, SystemAgent, SystemEdge } from "./types.js";

/** The environment variable holding the callee's base URL in the caller's process. */
export const peerUrlEnv = (callee: string) => `AGENT_${callee.toUpperCase()}_URL`;
/** The environment variable holding the caller's bearer token for the callee (bearer edges). */
export const peerTokenEnv = (callee: string) => `AGENT_${callee.toUpperCase()}_TOKEN`;
/** Where each agent of a system serves A2A: `system up` sets A2A_NAME to the agent's name. */
export const a2aPathOf = (agent: string) => `/a2a/${agent}`;

const RPC_OF_CALL = { ask: ["SendMessage", "SendStreamingMessage"], status: ["GetTask"], cancel: ["CancelTask"] } as const;

export function edgeApi(system: System, caller: SystemAgent, edge: SystemEdge): Record<string, JsonValue> {
  const callee = system.agents.find((a) => a.name === edge.agent);
  const audience = callee?.clientId ?? edge.agent;
  const path = a2aPathOf(edge.agent);
  const operations: JsonValue[] = [{ methods: ["GET"], path: `${path}/.well-known/agent-card.json` }];
  for (const call of edge.calls) for (const rpc_method of RPC_OF_CALL[call]) operations.push({ methods: ["POST"], path, rpc_method });
  return {
    description: edge.description || `The agent ${edge.agent}${system.name ? ` of the system ${system.name}` : ""}`,
    protocol: "a2a",
    a2a: { path },
    base_url_env: peerUrlEnv(edge.agent),
    auth: edge.auth,
    ...(edge.auth === "bearer" ? { token_env: peerTokenEnv(edge.agent) } : {}),
    ...(edge.auth === "forward" && caller.authPolicy === "jwt" ? { forward_audience: audience } : {}),
    ...(edge.auth === "exchange" ? { exchange: { audience, ...(edge.scope ? { scope: edge.scope } : {}), allow_actorless: edge.allowActorless } } : {}),
    allowed_methods: ["GET", "POST"],
    allowed_operations: operations,
    ...(edge.approvals === "relay"
      ? { approval: [{ required_for: { operations: [{ a2a_operation: "approve" }] }, approvers: ["requester"] }] }
      : { denied_operations: [{ a2a_operation: "approve" }, { a2a_operation: "reject" }] }),
  };
}

/** The APIs an agent's edges need, by callee name. */
export function edgeApis(system: System, caller: SystemAgent): Record<string, Record<string, JsonValue>> {
  return Object.fromEntries(caller.calls.map((edge) => [edge.agent, edgeApi(system, caller, edge)]));
}

export type MergedPolicy = { readonly ok: true; readonly text: string; readonly apis: readonly string[] } | { readonly ok: false; readonly problems: readonly PolicyProblem[] };

/**
 * The project's own policy (`own`, its text, if it has one) with the generated APIs added, as a
 * checked document. `ownName` names the project's file in problems.
 */
export function mergePolicy(own: string | undefined, ownName: string, generated: Record<string, Record<string, JsonValue>>, header: string): MergedPolicy {
  let apis: Record<string, unknown> = {};
  if (own !== undefined) {
    const doc = parseDocument(own, { uniqueKeys: true, merge: false });
    const top = doc.errors.length === 0 ? doc.contents : undefined;
    const mapped = isMap(top) ? (doc.toJS({ maxAliasCount: 100 }) as { apis?: unknown }) : undefined;
    if (!mapped || typeof mapped.apis !== "object" || mapped.apis === null || Array.isArray(mapped.apis))
      return { ok: false, problems: [{ place: ownName, message: "is not a policy document with apis (check it with npm run policy:check)" }] };
    apis = mapped.apis as Record<string, unknown>;
  }
  const clashes = Object.keys(generated).filter((name) => name in apis);
  if (clashes.length > 0)
    return {
      ok: false,
      problems: clashes.map((name) => ({ place: `${ownName} apis.${name}`, message: `the system file's edge to agent ${name} needs this API name; remove it from the project's policy` })),
    };
  const text = `${header.replace(/^/gm, "# ")}\n${stringify({ apis: { ...apis, ...generated } }, { lineWidth: 0 })}`;
  try {
    loadPolicy(text);
  } catch (error) {
    if (hasCode(error, "invalid_policy")) return { ok: false, problems: (error as { problems: PolicyProblem[] }).problems };
    throw error;
  }
  return { ok: true, text, apis: [...Object.keys(apis), ...Object.keys(generated)] };
}
