/**
 * The rules between keys of the policy document in JSON Schema form, for the editors' schema
 * (schemas/api-policy.schema.json, generated from schema.ts, which attaches these with `.meta()`).
 * The loader does not read them: document.ts checks the same rules in code, where each problem can
 * be placed and explained. JSON Schema cannot state every one of them (an A2A API that may send
 * messages must gate approve messages, A2A 0.3 method names): those are document.ts's alone.
 */

/** `^(GET|...)$` in any case, letter by letter: JSON Schema patterns take no flags. */
export function caseless(words: readonly string[]): RegExp {
  const letters = (w: string) => [...w].map((c) => (c.toUpperCase() === c.toLowerCase() ? c : `[${c.toUpperCase()}${c.toLowerCase()}]`)).join("");
  return new RegExp(`^(${words.map(letters).join("|")})$`);
}

/** An operation entry names its operation by at least one of these. */
export const OPERATION_ENTRY_NAMES = [{ required: ["operationId"] }, { required: ["path"] }, { required: ["rpc_method"] }, { required: ["a2a_operation"] }];

const jsonRpcMethod = {
  description: "A method a JSON-RPC API accepts: GET, POST or HEAD, in any case.",
  type: "string",
  pattern: caseless(["GET", "HEAD", "POST"]).source,
};

const httpEntry = {
  description: "On http APIs an entry has no rpc_method or a2a_operation.",
  not: { anyOf: [{ required: ["rpc_method"] }, { required: ["a2a_operation"] }] },
};

/** Between the keys of one API (document.ts `checkApi`). */
export const API_RULES = [
  {
    if: { required: ["protocol"], properties: { protocol: { const: "a2a" } } },
    then: { required: ["a2a"], properties: { auth: { not: { const: "none" } } } },
    else: { not: { required: ["a2a"] } },
  },
  {
    if: { required: ["protocol"], properties: { protocol: { enum: ["jsonrpc", "a2a"] } } },
    then: { properties: { allowed_methods: { anyOf: [{ const: "read-only" }, { type: "array", items: jsonRpcMethod }] } } },
    else: { properties: { allowed_operations: { items: httpEntry }, denied_operations: { items: httpEntry } } },
  },
  {
    if: { properties: { auth: { const: "bearer" } } },
    then: { required: ["token_env"] },
    else: { not: { required: ["token_env"] } },
  },
  {
    if: { properties: { auth: { const: "exchange" } } },
    then: { required: ["exchange"] },
    else: { not: { required: ["exchange"] } },
  },
  {
    if: { properties: { auth: { enum: ["forward", "exchange"] } } },
    else: { not: { required: ["forward_header"] } },
  },
  {
    if: { properties: { auth: { const: "forward" } } },
    else: { not: { required: ["forward_audience"] } },
  },
];

/** Between the keys of one approval rule: relayers go with decide_with relayed, which needs requester. */
export const APPROVAL_RULES = [
  {
    if: { required: ["decide_with"], properties: { decide_with: { const: "relayed" } } },
    then: { required: ["relayers"], properties: { approvers: { contains: { const: "requester" } } } },
    else: { not: { required: ["relayers"] } },
  },
];
