/**
 * schemas/api-policy.schema.json, the editor-facing JSON Schema generated from the zod schemas in
 * src/policy/schema.ts: the committed file is what `npm run schemas` writes; it has the same keys
 * (and required keys) at every level, the same name patterns and enums, every example policy in
 * policy/*.yaml is valid by both, and it refuses what the loader refuses where JSON Schema can say so.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { parse, stringify } from "yaml";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { loadPolicy } from "../../src/policy/document.js";
import { API_NAME, apiSchema, documentSchema, HTTP_METHODS, RPC_METHOD } from "../../src/policy/schema.js";
import { policyJsonSchemaText } from "../../src/tooling/policy-json-schema.js";

type Json = Record<string, any>;

const ROOT = resolve(import.meta.dirname, "../..");
const SCHEMA_TEXT = readFileSync(join(ROOT, "schemas/api-policy.schema.json"), "utf8");
const SCHEMA: Json = JSON.parse(SCHEMA_TEXT);
const EXAMPLES = readdirSync(join(ROOT, "policy"))
  .filter((f) => f.endsWith(".yaml"))
  .sort();

const ajv = new Ajv2020({ allErrors: true, strictTypes: false });
const validate = ajv.compile(SCHEMA);
const jsonValid = (value: unknown) => {
  const ok = validate(value);
  return { ok, errors: validate.errors ?? [] };
};

// ---- walking the JSON Schema -------------------------------------------------------------

function deref(node: Json): Json {
  let n = node;
  for (let i = 0; i < 10 && typeof n.$ref === "string"; i++) {
    const ref: string = n.$ref;
    expect(ref.startsWith("#/")).toBe(true);
    n = ref
      .slice(2)
      .split("/")
      .reduce((o: Json, k) => o[k], SCHEMA);
  }
  return n;
}

/** The object schema reached from `node`: through $ref, array items and oneOf/anyOf branches. */
function jsonObject(node: Json): Json | undefined {
  const n = deref(node);
  if (n.properties || n.type === "object") return n;
  if (n.items) return jsonObject(n.items);
  for (const branch of [...(n.oneOf ?? []), ...(n.anyOf ?? [])]) {
    const o = jsonObject(branch);
    if (o) return o;
  }
  return undefined;
}

/** Follows property names from the top; "*" is an API under apis. */
function jsonAt(path: readonly string[]): Json {
  let node: Json = SCHEMA;
  for (const key of path) {
    const obj = jsonObject(node);
    if (!obj) throw new Error(`no object at ${path.join(".")}`);
    node = key === "*" ? obj.additionalProperties : obj.properties[key];
    if (!node) throw new Error(`no ${key} in JSON Schema at ${path.join(".")}`);
  }
  const obj = jsonObject(node);
  if (!obj) throw new Error(`no object at ${path.join(".")}`);
  return obj;
}

// ---- walking the zod schemas -------------------------------------------------------------

type Def = { type: string; innerType?: z.ZodType; in?: z.ZodType; element?: z.ZodType; options?: z.ZodType[]; shape?: Record<string, z.ZodType> };
const def = (s: z.ZodType) => (s as unknown as { def: Def }).def;

/** The zod object reached from `s`: through optional/default/pipe, array elements and union options. */
function zodObject(s: z.ZodType): z.ZodObject | undefined {
  const d = def(s);
  switch (d.type) {
    case "object":
      return s as z.ZodObject;
    case "optional":
    case "default":
    case "nullable":
    case "readonly":
    case "prefault":
      return zodObject(d.innerType!);
    case "pipe":
      return zodObject(d.in!);
    case "array":
      return zodObject(d.element!);
    case "union":
      for (const o of d.options!) {
        const found = zodObject(o);
        if (found) return found;
      }
      return undefined;
    default:
      return undefined;
  }
}

function zodAt(path: readonly string[]): z.ZodObject {
  let obj: z.ZodObject | undefined = documentSchema;
  for (const key of path) {
    // apis is a record of unknown values; each value is parsed with apiSchema (document.ts).
    const next: z.ZodType | undefined = key === "*" ? apiSchema : obj?.shape[key];
    if (!next) throw new Error(`no ${key} in zod schema at ${path.join(".")}`);
    obj = zodObject(next);
  }
  if (!obj) throw new Error(`no zod object at ${path.join(".")}`);
  return obj;
}

const optional = (s: z.ZodType) => ["optional", "default", "prefault"].includes(def(s).type);
const zodKeys = (o: z.ZodObject) => Object.keys(o.shape).sort();
const zodRequired = (o: z.ZodObject) => Object.entries(o.shape as Record<string, z.ZodType>).filter(([, s]) => !optional(s)).map(([k]) => k).sort();

// ---- the levels ----------------------------------------------------------------------------

const LEVELS: [string, string[]][] = [
  ["top", []],
  ["api", ["apis", "*"]],
  ["a2a", ["apis", "*", "a2a"]],
  ["exchange", ["apis", "*", "exchange"]],
  ["operation entry (allowed_operations)", ["apis", "*", "allowed_operations"]],
  ["operation entry (denied_operations)", ["apis", "*", "denied_operations"]],
  ["timeouts_ms", ["apis", "*", "timeouts_ms"]],
  ["pagination", ["apis", "*", "pagination"]],
  ["limits", ["apis", "*", "limits"]],
  ["approval rule", ["apis", "*", "approval"]],
  ["required_for", ["apis", "*", "approval", "required_for"]],
  ["operation entry (required_for.operations)", ["apis", "*", "approval", "required_for", "operations"]],
];

describe("JSON Schema and zod schema in step", () => {
  it("is the file npm run schemas writes from the zod schema", () => {
    expect(SCHEMA_TEXT, "schemas/api-policy.schema.json is stale: run npm run schemas").toBe(policyJsonSchemaText());
  });

  it("is a draft 2020-12 schema with an $id and a title", () => {
    expect(SCHEMA.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(typeof SCHEMA.$id).toBe("string");
    expect(typeof SCHEMA.title).toBe("string");
  });

  it.each(LEVELS)("%s: same keys", (_, path) => {
    expect(Object.keys(jsonAt(path).properties).sort()).toEqual(zodKeys(zodAt(path)));
  });

  it.each(LEVELS)("%s: same required keys, no others allowed", (_, path) => {
    const json = jsonAt(path);
    expect([...(json.required ?? [])].sort()).toEqual(zodRequired(zodAt(path)));
    expect(json.additionalProperties).toBe(false);
  });

  it("allows no other keys anywhere, and describes the keys", () => {
    const objects: Json[] = [];
    const visit = (n: unknown) => {
      if (Array.isArray(n)) return n.forEach(visit);
      if (!n || typeof n !== "object") return;
      const node = n as Json;
      if (node.properties && node.type === "object") objects.push(node);
      Object.values(node).forEach(visit);
    };
    visit(SCHEMA);
    expect(objects.length).toBeGreaterThanOrEqual(10);
    for (const o of objects) expect(o.additionalProperties === false || typeof o.additionalProperties === "object").toBe(true);
    for (const [, path] of LEVELS.slice(1))
      for (const [key, prop] of Object.entries(jsonAt(path).properties as Json))
        expect(typeof (prop as Json).description === "string" || typeof deref(prop as Json).description === "string", `${path.join(".")}.${key} has no description`).toBe(true);
  });

  it("uses the same patterns for API names and rpc_method", () => {
    expect(SCHEMA.properties.apis.propertyNames.pattern).toBe(API_NAME.source);
    expect(jsonAt(["apis", "*", "allowed_operations"]).properties.rpc_method.pattern).toBe(RPC_METHOD.source);
  });

  it("uses the same enums", () => {
    const api = jsonAt(["apis", "*"]).properties;
    const zapi = zodAt(["apis", "*"]).shape as Record<string, z.ZodType>;
    const enumOf = (s: z.ZodType) => [...((zodLeaf(s) as unknown as { options: string[] }).options ?? [])].sort();
    expect([...api.protocol.enum].sort()).toEqual(enumOf(zapi.protocol!));
    expect([...api.auth.enum].sort()).toEqual(enumOf(zapi.auth!));
    const entry = zodAt(["apis", "*", "allowed_operations"]).shape as Record<string, z.ZodType>;
    expect([...jsonAt(["apis", "*", "allowed_operations"]).properties.a2a_operation.enum].sort()).toEqual(enumOf(entry.a2a_operation!));
    expect([...jsonAt(["apis", "*", "approval"]).properties.decide_with.enum].sort()).toEqual(["direct", "relayed"]);
  });

  it("accepts the same methods, in any case", () => {
    const method = new RegExp(SCHEMA.$defs.method.pattern);
    for (const m of HTTP_METHODS) {
      expect(method.test(m)).toBe(true);
      expect(method.test(m.toLowerCase())).toBe(true);
      expect(method.test(m[0] + m.slice(1).toLowerCase())).toBe(true);
    }
    for (const m of ["*", "TRACE", "CONNECT", "GETS", ""]) expect(method.test(m)).toBe(false);
  });
});

function zodLeaf(s: z.ZodType): z.ZodType {
  const d = def(s);
  if (["optional", "default", "nullable", "readonly", "prefault"].includes(d.type)) return zodLeaf(d.innerType!);
  return s;
}

describe("example policies (policy/*.yaml)", () => {
  it("are the four documented examples", () => {
    expect(EXAMPLES).toEqual(expect.arrayContaining(["a2a-peer.yaml", "gated-writes.yaml", "jsonrpc.yaml", "read-only-rest.yaml"]));
  });

  it.each(EXAMPLES)("%s is valid by the JSON Schema and loads", (file) => {
    const text = readFileSync(join(ROOT, "policy", file), "utf8");
    const result = jsonValid(parse(text));
    expect(result.errors).toEqual([]);
    expect(result.ok).toBe(true);
    expect(loadPolicy(text).apis.size).toBeGreaterThan(0);
  });
});

describe("the JSON Schema refuses what the loader refuses", () => {
  const HTTP = { base_url_env: "X_URL", auth: "none", allowed_methods: ["GET"] };
  const A2A = {
    protocol: "a2a",
    a2a: { path: "/a2a" },
    base_url_env: "P",
    auth: "bearer",
    token_env: "T",
    allowed_methods: ["POST"],
    approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] },
  };
  const GATE = { required_for: { methods: ["POST"] }, approvers: ["requester"] };
  const both = (apis: Record<string, unknown>) => {
    const text = stringify({ apis });
    let loaded = true;
    try {
      loadPolicy(text);
    } catch {
      loaded = false;
    }
    return { loaded, json: jsonValid(parse(text)).ok };
  };

  const refusedByBoth: [string, Record<string, unknown>][] = [
    ["bad API name", { Bad: HTTP }],
    ["unknown API key", { x: { ...HTTP, extra: 1 } }],
    ["unknown entry key", { x: { ...HTTP, allowed_operations: [{ path: "/a", approval: GATE }] } }],
    ["missing auth", { x: { base_url_env: "X", allowed_methods: ["GET"] } }],
    ["bad env name", { x: { ...HTTP, base_url_env: "1X" } }],
    ['"*" mixed with methods', { x: { ...HTTP, allowed_methods: ["*", "GET"] } }],
    ["unknown method", { x: { ...HTTP, allowed_methods: ["FETCH"] } }],
    ["empty allowed_operations", { x: { ...HTTP, allowed_operations: [] } }],
    ["entry without a name", { x: { ...HTTP, allowed_operations: [{ methods: ["GET"] }] } }],
    ["path with a query", { x: { ...HTTP, allowed_operations: [{ path: "/a?b=1" }] } }],
    ["path with ;", { x: { ...HTTP, allowed_operations: [{ path: "/a;b" }] } }],
    ["path with a backslash", { x: { ...HTTP, allowed_operations: [{ path: "/a\\b" }] } }],
    ["rpc_method on http", { x: { ...HTTP, allowed_operations: [{ path: "/rpc", rpc_method: "a.b" }] } }],
    ["PUT on jsonrpc", { x: { ...HTTP, protocol: "jsonrpc", allowed_methods: ["PUT"] } }],
    ['["*"] on jsonrpc', { x: { ...HTTP, protocol: "jsonrpc", allowed_methods: ["*"] } }],
    ["bearer without token_env", { x: { ...HTTP, auth: "bearer" } }],
    ["token_env without bearer", { x: { ...HTTP, token_env: "T" } }],
    ["exchange without auth exchange", { x: { ...HTTP, exchange: { audience: "a" } } }],
    ["auth exchange without exchange", { x: { ...HTTP, auth: "exchange" } }],
    ["bad scope", { x: { ...HTTP, auth: "exchange", exchange: { audience: "a", scope: "a  b" } } }],
    ["resource with fragment", { x: { ...HTTP, auth: "exchange", exchange: { audience: "a", resource: "https://x.example/#f" } } }],
    ["forward_audience without forward", { x: { ...HTTP, forward_audience: "aud" } }],
    ["forward_header with none", { x: { ...HTTP, forward_header: "X-T" } }],
    ["a2a without protocol a2a", { x: { ...HTTP, a2a: { path: "/a2a" } } }],
    ["protocol a2a without a2a", { x: { ...A2A, a2a: undefined } }],
    ["templated a2a.path", { x: { ...A2A, a2a: { path: "/a/{id}" } } }],
    ["protocol a2a with auth none", { x: { ...A2A, auth: "none", token_env: undefined } }],
    ["empty limits", { x: { ...HTTP, limits: {} } }],
    ["max_response_bytes too big", { x: { ...HTTP, limits: { max_response_bytes: 67108865 } } }],
    ["timeouts_ms 0", { x: { ...HTTP, timeouts_ms: { connect: 0 } } }],
    ["pagination half", { x: { ...HTTP, pagination: { page_size_param: "limit" } } }],
    ["description with a line break", { x: { ...HTTP, description: "a\nb" } }],
    ["empty approval list", { x: { ...HTTP, approval: [] } }],
    ["timeout_s 10", { x: { ...HTTP, approval: { ...GATE, timeout_s: 10 } } }],
    ["decide_with step_up", { x: { ...HTTP, approval: { ...GATE, decide_with: "step_up" } } }],
    ["relayed without relayers", { x: { ...HTTP, approval: { ...GATE, decide_with: "relayed" } } }],
    ["relayers without relayed", { x: { ...HTTP, approval: { ...GATE, relayers: ["a"] } } }],
    ["relayed without requester", { x: { ...HTTP, approval: { ...GATE, approvers: ["role:x"], decide_with: "relayed", relayers: ["a"] } } }],
    ["bad approver", { x: { ...HTTP, approval: { ...GATE, approvers: ["admin"] } } }],
  ];
  it.each(refusedByBoth)("%s", (_, apis) => {
    expect(both(JSON.parse(JSON.stringify(apis)))).toEqual({ loaded: false, json: false });
  });

  it("and accepts what the loader accepts", () => {
    expect(both({ x: HTTP })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, allowed_methods: "read-only" } })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, allowed_methods: ["*"] } })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, allowed_methods: ["get", "Post"] } })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, protocol: "jsonrpc", allowed_methods: ["post"], allowed_operations: [{ rpc_method: "a.b/c" }] } })).toEqual({ loaded: true, json: true });
    expect(both({ x: A2A })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, auth: "forward", forward_header: "X-T", forward_audience: "aud" } })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, auth: "exchange", exchange: { audience: "a", scope: "r w", resource: "urn:x:y", allow_actorless: true } } })).toEqual({ loaded: true, json: true });
    expect(both({ x: { ...HTTP, allowed_methods: ["POST"], approval: [GATE, { ...GATE, approvers: ["requester", "role:ops"], decide_with: "relayed", relayers: ["agent-a"] }] } })).toEqual({
      loaded: true,
      json: true,
    });
    expect(both({ x: { ...HTTP, allowed_operations: [{ path: "/a/{id}/" }, { operationId: "op" }] } })).toEqual({ loaded: true, json: true });
  });
});
