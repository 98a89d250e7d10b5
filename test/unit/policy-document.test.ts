/**
 * loadPolicy (src/policy/document.ts): the outbound API policy document of spec 2.6 and 2.7, and
 * every validation error of spec 7.5, each with its place and a fragment of its message.
 */
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { loadPolicy, type PolicyProblem } from "../../src/policy/document.js";

type Api = Record<string, unknown>;

const HTTP: Api = { base_url_env: "X_URL", auth: "none", allowed_methods: ["GET"] };
const RPC: Api = { protocol: "jsonrpc", base_url_env: "RPC_URL", auth: "none", allowed_methods: ["POST"] };
const A2A: Api = {
  protocol: "a2a",
  a2a: { path: "/a2a" },
  base_url_env: "PEER_URL",
  auth: "bearer",
  token_env: "PEER_TOKEN",
  allowed_methods: ["GET", "POST"],
  approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] },
};
const GATE = { required_for: { methods: ["POST"] }, approvers: ["requester"] };

/** A document of the given APIs, as YAML text. */
const doc = (apis: Record<string, Api>) => stringify({ apis });
const api = (over: Api, base: Api = HTTP) => doc({ x: strip({ ...base, ...over }) });
/** Keys set to undefined are left out. */
const strip = (o: Api): Api => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** The problems of a document that must not load. */
function problemsOf(text: string): readonly PolicyProblem[] {
  try {
    loadPolicy(text);
  } catch (error) {
    expect((error as Error).name).toBe("PolicyError");
    return (error as { problems: PolicyProblem[] }).problems;
  }
  throw new Error(`expected a PolicyError for:\n${text}`);
}

/** The document is refused with (at least) a problem at `place` whose message has `fragment`. */
function refused(text: string, place: string, fragment: string | RegExp): readonly PolicyProblem[] {
  const problems = problemsOf(text);
  const hit = problems.find((p) => p.place === place && (typeof fragment === "string" ? p.message.includes(fragment) : fragment.test(p.message)));
  expect(hit, `no problem at ${place} matching ${String(fragment)}; got ${JSON.stringify(problems)}`).toBeDefined();
  return problems;
}

/** The document is refused with a problem at `place` or below it. */
function refusedWithin(text: string, place: string): readonly PolicyProblem[] {
  const problems = problemsOf(text);
  const hit = problems.find((p) => p.place === place || p.place.startsWith(`${place}.`) || p.place.startsWith(`${place}[`));
  expect(hit, `no problem at or below ${place}; got ${JSON.stringify(problems)}`).toBeDefined();
  return problems;
}

const loads = (text: string) => {
  const policy = loadPolicy(text);
  expect(policy.apis.size).toBeGreaterThan(0);
  return policy;
};

describe("loadPolicy: the document", () => {
  it("needs the one key apis, a non-empty mapping", () => {
    refused("", "document", "must be a mapping");
    refused("- a\n- b\n", "document", "must be a mapping");
    refused("other: 1\n", "apis", "is required");
    refused("apis: {}\n", "apis", "at least one API");
    refused("apis: [a, b]\n", "apis", "mapping of API names");
  });

  it("refuses text that is not YAML", () => {
    const problems = problemsOf("apis: [unclosed\n");
    expect(problems.some((p) => p.message.includes("not valid YAML"))).toBe(true);
  });

  it("refuses an API whose settings are not a mapping", () => {
    refused(doc({ x: 5 as unknown as Api }), "apis.x", "must be a mapping");
  });

  it("API names match ^[a-z][a-z0-9_]{0,31}$", () => {
    for (const good of ["a", "orders", "crm_v2", "a".repeat(32)]) expect(loads(doc({ [good]: HTTP })).apis.has(good)).toBe(true);
    for (const bad of ["Orders", "1api", "my-api", "_x", "a".repeat(33), "ünï"]) refused(doc({ [bad]: HTTP }), `apis.${bad}`, "^[a-z][a-z0-9_]{0,31}$");
  });
});

describe("loadPolicy: unknown keys at every level", () => {
  const cases: [string, string, string][] = [
    ["top", "apis:\n  x: {base_url_env: X, auth: none, allowed_methods: [GET]}\nversion: 1\n", "document"],
    ["api", api({ timeout: 5 }), "apis.x"],
    ["operation entry", api({ allowed_operations: [{ path: "/a", approval: GATE }] }), "apis.x.allowed_operations[0]"],
    ["denied entry", api({ denied_operations: [{ path: "/a", note: "x" }] }), "apis.x.denied_operations[0]"],
    ["exchange", api({ auth: "exchange", exchange: { audience: "aud", issuer: "x" } }), "apis.x.exchange"],
    ["approval rule", api({ allowed_methods: ["POST"], approval: { ...GATE, redact: ["a"] } }), "apis.x.approval"],
    ["approval rule in a list", api({ allowed_methods: ["POST"], approval: [GATE, { ...GATE, when: 1 }] }), "apis.x.approval[1]"],
    ["required_for", api({ allowed_methods: ["POST"], approval: { ...GATE, required_for: { methods: ["POST"], paths: ["/a"] } } }), "apis.x.approval.required_for"],
    [
      "required_for operation entry",
      api({ allowed_methods: ["POST"], approval: { ...GATE, required_for: { operations: [{ path: "/a", approval: 1 }] } } }),
      "apis.x.approval.required_for.operations[0]",
    ],
    ["limits", api({ limits: { max_calls_per_run: 1, per_hour: 5 } }), "apis.x.limits"],
    ["timeouts_ms", api({ timeouts_ms: { connect: 100, write: 100 } }), "apis.x.timeouts_ms"],
    ["pagination", api({ pagination: { page_size_param: "limit", max_page_size: 10, cursor: "c" } }), "apis.x.pagination"],
    ["a2a", api({ a2a: { path: "/a2a", version: "1.0" } }, A2A), "apis.x.a2a"],
  ];
  it.each(cases)("%s", (_, text, place) => {
    refused(text, place, "has unknown key");
  });

  it("names every unknown key", () => {
    refused(api({ one: 1, two: 2 }), "apis.x", /unknown keys one, two/);
  });
});

describe("loadPolicy: repeated keys", () => {
  it("refuses a repeated key with its line (YAML duplicate key)", () => {
    const text = ["apis:", "  x:", "    base_url_env: X", "    auth: none", "    allowed_methods: [GET]", "    auth: bearer", ""].join("\n");
    const problems = problemsOf(text);
    expect(problems.some((p) => p.message.includes("repeats a key"))).toBe(true);
  });

  it("names the place of a repeated key (spec 2.6, 7.5) and its line", () => {
    const text = ["apis:", "  x:", "    base_url_env: X", "    auth: none", "    allowed_methods: [GET]", "    auth: bearer", ""].join("\n");
    refused(text, "apis.x.auth", "repeats a key (line 6)");
  });

  it("names a repeated API name and a repeated key inside a list item", () => {
    refused("apis:\n  x: {base_url_env: X, auth: none, allowed_methods: [GET]}\n  x: {base_url_env: Y, auth: none, allowed_methods: [GET]}\n", "apis.x", "repeats a key (line 3)");
    refused(
      "apis:\n  x:\n    base_url_env: X\n    auth: none\n    allowed_methods: [GET]\n    allowed_operations:\n      - {path: /a}\n      - {path: /a, path: /b}\n",
      "apis.x.allowed_operations.1.path",
      "repeats a key",
    );
  });

  it("places text that is not YAML at `line N`, with the parser's reason", () => {
    // The parser reports where it notices the problem: the end of the unclosed list.
    const problems = refused("apis:\n  x: [unclosed\n", "line 3", "not valid YAML: ");
    expect(problems[0]!.message.length).toBeGreaterThan("is not valid YAML: ".length);
  });

  it("names the file of a YAML syntax error", () => {
    expect(() => loadPolicy("apis:\n  x: [unclosed\n", "policy/api-policy.yaml")).toThrow(/policy\/api-policy\.yaml line 3 is not valid YAML/);
  });

  it("refuses every repeated key, whatever the level", () => {
    const cases = [
      "apis:\n  x: {base_url_env: X, auth: none, allowed_methods: [GET]}\napis:\n  y: {base_url_env: X, auth: none, allowed_methods: [GET]}\n",
      "apis:\n  x:\n    base_url_env: X\n    auth: none\n    allowed_methods: [GET]\n    limits: {rate_per_minute: 1, rate_per_minute: 2}\n",
      "apis:\n  x:\n    base_url_env: X\n    auth: none\n    allowed_methods: [GET]\n    allowed_operations:\n      - {path: /a, path: /b}\n",
    ];
    for (const text of cases) expect(problemsOf(text).map((p) => p.message)).toContainEqual(expect.stringContaining("repeats a key"));
  });
});

describe("loadPolicy: every problem at once", () => {
  it("reports five problems of a document with five errors", () => {
    const text = doc({
      Bad: HTTP,
      a: { ...HTTP, protocol: "grpc" },
      b: { ...HTTP, auth: "bearer" },
      c: { ...HTTP, forward_audience: "aud" },
      d: { ...RPC, allowed_methods: ["PUT"] },
    });
    const problems = problemsOf(text);
    expect(problems.map((p) => p.place).sort()).toEqual(["apis.Bad", "apis.a.protocol", "apis.b.token_env", "apis.c.forward_audience", "apis.d.allowed_methods"]);
  });

  it("reports several problems of one API", () => {
    const problems = problemsOf(api({ auth: "bearer", forward_header: "X-Token", forward_audience: "aud", exchange: { audience: "a" } }));
    expect(problems.map((p) => p.place).sort()).toEqual(["apis.x.exchange", "apis.x.forward_audience", "apis.x.forward_header", "apis.x.token_env"]);
  });

  // Regression: an API with a field error skips the checks between its fields, so a second run shows the rest (spec 2.6/7.5).
  it("reports field errors and rules between fields of the same API together", () => {
    const problems = problemsOf(api({ description: "", auth: "bearer" }));
    expect(problems.map((p) => p.place).sort()).toEqual(["apis.x.description", "apis.x.token_env"]);
  });
});

describe("loadPolicy: simple keys", () => {
  it("description: 1-300 characters, no control characters", () => {
    expect(loads(api({ description: "d".repeat(300) })).apis.get("x")?.description).toHaveLength(300);
    refused(api({ description: "" }), "apis.x.description", "must not be empty");
    refused(api({ description: "d".repeat(301) }), "apis.x.description", "at most 300");
    refused(api({ description: "two\nlines" }), "apis.x.description", "control characters");
    refused(api({ description: "tab\there" }), "apis.x.description", "control characters");
    refused(api({ description: "del\u007f" }), "apis.x.description", "control characters");
    refused(api({ description: 5 }), "apis.x.description", "must be text");
  });

  it("description counts characters, not UTF-16 code units", () => {
    loads(api({ description: "\u{1F600}".repeat(300) }));
    refused(api({ description: "\u{1F600}".repeat(301) }), "apis.x.description", "at most 300");
  });

  // Regression: "no control characters" lets C1 controls (U+0080-U+009F, e.g. NEL) through.
  it("description refuses C1 control characters", () => {
    refused(api({ description: "next\u0085line" }), "apis.x.description", "control characters");
  });

  it("protocol: http (default), jsonrpc or a2a", () => {
    expect(loads(api({})).apis.get("x")?.protocol).toBe("http");
    expect(loads(api({ protocol: "jsonrpc" })).apis.get("x")?.protocol).toBe("jsonrpc");
    refused(api({ protocol: "grpc" }), "apis.x.protocol", "must be http, jsonrpc or a2a");
    refused(api({ protocol: "HTTP" }), "apis.x.protocol", "must be http, jsonrpc or a2a");
  });

  it("base_url_env: required, an environment variable name", () => {
    refused(api({ base_url_env: undefined }), "apis.x.base_url_env", "is required");
    refused(api({ base_url_env: "1URL" }), "apis.x.base_url_env", "environment variable name");
    refused(api({ base_url_env: "MY-URL" }), "apis.x.base_url_env", "environment variable name");
    refused(api({ base_url_env: "" }), "apis.x.base_url_env", "environment variable name");
  });

  it("auth: required, none, bearer, forward or exchange", () => {
    refused(api({ auth: undefined }), "apis.x.auth", /is required|must be none, bearer, forward or exchange/);
    refused(api({ auth: "basic" }), "apis.x.auth", "must be none, bearer, forward or exchange");
  });

  it("token_env: required with bearer, invalid otherwise", () => {
    expect(loads(api({ auth: "bearer", token_env: "X_TOKEN" })).apis.get("x")?.tokenEnv).toBe("X_TOKEN");
    refused(api({ auth: "bearer" }), "apis.x.token_env", "is required with auth bearer");
    refused(api({ token_env: "X_TOKEN" }), "apis.x.token_env", "only valid with auth bearer");
    refused(api({ auth: "forward", token_env: "X_TOKEN" }), "apis.x.token_env", "only valid with auth bearer");
    refused(api({ auth: "bearer", token_env: "X TOKEN" }), "apis.x.token_env", "environment variable name");
  });

  it("forward_header: only with forward or exchange", () => {
    expect(loads(api({ auth: "forward", forward_header: "X-User-Token" })).apis.get("x")?.forwardHeader).toBe("X-User-Token");
    expect(loads(api({ auth: "exchange", exchange: { audience: "a" }, forward_header: "X-T" })).apis.get("x")?.forwardHeader).toBe("X-T");
    refused(api({ forward_header: "X-T" }), "apis.x.forward_header", "only valid with auth forward or exchange");
    refused(api({ auth: "bearer", token_env: "T", forward_header: "X-T" }), "apis.x.forward_header", "only valid with auth forward or exchange");
    refused(api({ auth: "forward", forward_header: "Bad Header" }), "apis.x.forward_header", "must be a header name");
  });

  it("forward_audience: only with forward; 1-256 characters without spaces, commas, control characters", () => {
    expect(loads(api({ auth: "forward", forward_audience: "https://orders.example" })).apis.get("x")?.forwardAudience).toBe("https://orders.example");
    loads(api({ auth: "forward", forward_audience: "a".repeat(256) }));
    refused(api({ auth: "exchange", exchange: { audience: "a" }, forward_audience: "aud" }), "apis.x.forward_audience", "only valid with auth forward");
    refused(api({ forward_audience: "aud" }), "apis.x.forward_audience", "only valid with auth forward");
    for (const bad of ["a b", "a,b", "a\u0001b", "a\u0085b", "a\u009fb"]) refused(api({ auth: "forward", forward_audience: bad }), "apis.x.forward_audience", "no spaces, commas or control");
    refused(api({ auth: "forward", forward_audience: "" }), "apis.x.forward_audience", "must not be empty");
    refused(api({ auth: "forward", forward_audience: "a".repeat(257) }), "apis.x.forward_audience", "at most 256");
  });

  it("openapi: a file path", () => {
    expect(loads(api({ openapi: "openapi/orders.yaml" })).apis.get("x")?.openapi).toBe("openapi/orders.yaml");
    refused(api({ openapi: 3 }), "apis.x.openapi", "file path");
    expect(problemsOf(api({ openapi: "" })).some((p) => p.place === "apis.x.openapi")).toBe(true);
  });
});

describe("loadPolicy: exchange", () => {
  const ex = (exchange: unknown) => api({ auth: "exchange", exchange });

  it("is required with auth exchange and invalid otherwise", () => {
    refused(api({ auth: "exchange" }), "apis.x.exchange", "is required with auth exchange");
    refused(api({ exchange: { audience: "a" } }), "apis.x.exchange", "only valid with auth exchange");
    refused(api({ auth: "forward", exchange: { audience: "a" } }), "apis.x.exchange", "only valid with auth exchange");
    refused(ex("aud"), "apis.x.exchange", "must be a mapping");
  });

  it("loads audience, scope, resource and allow_actorless (default false)", () => {
    const full = loads(ex({ audience: "orders-api", scope: "orders:read orders:write", resource: "https://orders.example/api", allow_actorless: true })).apis.get("x");
    expect(full?.exchange).toEqual({ audience: "orders-api", scope: "orders:read orders:write", resource: "https://orders.example/api", allow_actorless: true });
    expect(loads(ex({ audience: "a" })).apis.get("x")?.exchange).toEqual({ audience: "a", allow_actorless: false });
    expect(loads(ex({ audience: "a", resource: "urn:example:orders" })).apis.get("x")?.exchange?.resource).toBe("urn:example:orders");
  });

  it("audience: required, 1-256 characters, no spaces, commas, control characters", () => {
    refused(ex({ scope: "a" }), "apis.x.exchange.audience", "is required");
    refused(ex({ audience: "" }), "apis.x.exchange.audience", "must not be empty");
    refused(ex({ audience: "a".repeat(257) }), "apis.x.exchange.audience", "at most 256");
    for (const bad of ["a b", "a,b", "a\tb", "a\u0085b"]) refused(ex({ audience: bad }), "apis.x.exchange.audience", "no spaces, commas or control");
    loads(ex({ audience: "a".repeat(256) }));
  });

  it("scope: RFC 6749 scope tokens separated by single spaces", () => {
    loads(ex({ audience: "a", scope: "read" }));
    loads(ex({ audience: "a", scope: "read write admin:x https://x.example/s!" }));
    for (const bad of ["", "read  write", " read", "read ", "re\"ad", "re\\ad", "read\twrite", "lé"])
      refused(ex({ audience: "a", scope: bad }), "apis.x.exchange.scope", "RFC 6749");
  });

  it("resource: an absolute URI without fragment (RFC 8707)", () => {
    for (const bad of ["https://orders.example/api#frag", "/relative", "orders.example", "https://orders example", ""])
      refused(ex({ audience: "a", resource: bad }), "apis.x.exchange.resource", "absolute URI without fragment");
  });

  it("allow_actorless: true or false", () => {
    for (const bad of ["yes", "true", 1]) refused(ex({ audience: "a", allow_actorless: bad }), "apis.x.exchange.allow_actorless", "true or false");
    refused("apis:\n  x:\n    base_url_env: X\n    auth: exchange\n    allowed_methods: [GET]\n    exchange: {audience: a, allow_actorless: yes}\n", "apis.x.exchange.allow_actorless", "true or false");
  });
});

describe("loadPolicy: allowed_methods", () => {
  const methodsOf = (value: unknown, base: Api = HTTP) => [...(loads(api({ allowed_methods: value }, base)).apis.get("x")?.allowedMethods ?? [])].sort();

  it("is required", () => {
    refused(api({ allowed_methods: undefined }), "apis.x.allowed_methods", /is required|must be a list of methods/);
  });

  it("is a list of methods in any case", () => {
    expect(methodsOf(["get", "Post", "DELETE", "options", "pAtCh", "put", "head"])).toEqual(["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"]);
  });

  it('is ["*"] alone: every method', () => {
    expect(methodsOf(["*"])).toEqual(["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"]);
    expect(problemsOf(api({ allowed_methods: ["*", "GET"] })).some((p) => p.place.startsWith("apis.x.allowed_methods"))).toBe(true);
    expect(problemsOf(api({ allowed_methods: ["GET", "*"] })).some((p) => p.place.startsWith("apis.x.allowed_methods"))).toBe(true);
    expect(problemsOf(api({ allowed_methods: ["*", "*"] })).some((p) => p.place.startsWith("apis.x.allowed_methods"))).toBe(true);
  });

  it("accepts the shorthands read-only and read-write", () => {
    expect(methodsOf("read-only")).toEqual(["GET", "HEAD"]);
    expect(methodsOf("read-write")).toEqual(["DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"]);
  });

  it("refuses other methods, other words and an empty list", () => {
    refused(api({ allowed_methods: ["GET", "FETCH"] }), "apis.x.allowed_methods[1]", "must be one of GET, HEAD, POST");
    refused(api({ allowed_methods: ["TRACE"] }), "apis.x.allowed_methods[0]", "must be one of");
    refused(api({ allowed_methods: [] }), "apis.x.allowed_methods", "must not be empty");
    refused(api({ allowed_methods: "all" }), "apis.x.allowed_methods", "read-only or read-write");
    refused(api({ allowed_methods: "GET" }), "apis.x.allowed_methods", "read-only or read-write");
  });

  it("allows GET, POST, HEAD only on JSON-RPC APIs (jsonrpc and a2a)", () => {
    expect(methodsOf(["get", "post", "head"], RPC)).toEqual(["GET", "HEAD", "POST"]);
    expect(methodsOf("read-only", RPC)).toEqual(["GET", "HEAD"]);
    for (const bad of [["PUT"], ["POST", "DELETE"], ["*"], "read-write", ["options"]]) {
      refused(api({ allowed_methods: bad }, RPC), "apis.x.allowed_methods", "GET, POST, HEAD only");
      refused(api({ allowed_methods: bad }, A2A), "apis.x.allowed_methods", "GET, POST, HEAD only");
    }
  });
});

describe("loadPolicy: operation entries", () => {
  const allowed = (entry: unknown, base: Api = HTTP) => api({ allowed_operations: [entry] }, base);
  const pathOk = (path: string) => loads(allowed({ path }));
  const pathRefused = (path: string, fragment: string) => refused(allowed({ path }), "apis.x.allowed_operations[0].path", fragment);

  it("allowed_operations: empty list refused (omit the key)", () => {
    refused(api({ allowed_operations: [] }), "apis.x.allowed_operations", "omit the key");
    refused(api({ allowed_operations: { path: "/a" } }), "apis.x.allowed_operations", "must be a list");
    expect(loads(api({})).apis.get("x")?.allowed).toBeUndefined();
  });

  it("denied_operations: a list, may be empty", () => {
    expect(loads(api({ denied_operations: [] })).apis.get("x")?.denied).toEqual([]);
    refused(api({ denied_operations: "/admin" }), "apis.x.denied_operations", "must be a list");
  });

  it("an entry needs operationId or path (or rpc_method / a2a_operation on JSON-RPC APIs)", () => {
    refused(allowed({ methods: ["GET"] }), "apis.x.allowed_operations[0]", "needs operationId or path");
    refused(allowed({}), "apis.x.allowed_operations[0]", "needs operationId or path");
    refused(allowed({ methods: ["POST"] }, RPC), "apis.x.allowed_operations[0]", "needs operationId, path, rpc_method or a2a_operation");
    refused(api({ denied_operations: [{ methods: ["GET"] }] }), "apis.x.denied_operations[0]", "needs operationId or path");
    loads(allowed({ operationId: "listOrders" }));
    loads(allowed({ rpc_method: "orders.list" }, RPC));
    loads(allowed({ a2a_operation: "reject" }, A2A));
    refused(allowed("/orders"), "apis.x.allowed_operations[0]", "must be a mapping");
  });

  it("an approval key on an entry is refused", () => {
    refused(allowed({ path: "/orders", approval: GATE }), "apis.x.allowed_operations[0]", "unknown key approval");
  });

  it("operationId: a label without spaces", () => {
    loads(allowed({ operationId: "orders.list-v2" }));
    refused(allowed({ operationId: "list orders" }), "apis.x.allowed_operations[0].operationId", "without spaces");
    refused(allowed({ operationId: "" }), "apis.x.allowed_operations[0].operationId", "without spaces");
  });

  it("methods: a non-empty list of methods, no *, any case", () => {
    const e = loads(allowed({ path: "/a", methods: ["get", "Head"] })).apis.get("x")?.allowed?.[0];
    expect([...(e?.methods ?? [])].sort()).toEqual(["GET", "HEAD"]);
    refused(allowed({ path: "/a", methods: ["*"] }), "apis.x.allowed_operations[0].methods[0]", "must be one of");
    refused(allowed({ path: "/a", methods: [] }), "apis.x.allowed_operations[0].methods", "must not be empty");
    refused(allowed({ path: "/a", methods: "GET" }), "apis.x.allowed_operations[0].methods", "list of methods");
  });

  it("path: literal segments and {name} placeholders; one trailing slash", () => {
    for (const p of ["/", "/orders", "/orders/", "/orders/{order_id}", "/orders/{id}/items/{itemId}/", "/a/b.json", "/.well-known/agent.json", "/a/%7Euser", "/a/%20b", "/a:b@c!$&'()*+,="])
      pathOk(p);
    expect(loads(allowed({ path: "/orders/{id}/" })).apis.get("x")?.allowed?.[0]?.path?.strict).toEqual(["orders", null]);
  });

  it("path: must start with /", () => {
    pathRefused("orders", "must start with /");
    pathRefused("", "must start with /");
    pathRefused("https://x.example/orders", "must start with /");
  });

  it("path: no query or fragment", () => {
    pathRefused("/orders?limit=5", "query or fragment");
    pathRefused("/orders#top", "query or fragment");
  });

  it("path: no whitespace", () => {
    pathRefused("/or ders", "whitespace");
    pathRefused("/orders\t", "whitespace");
    pathRefused("/orders/\u00a0", "whitespace");
  });

  it("path: no control characters, also percent-encoded", () => {
    pathRefused("/orders\u0001", "control characters");
    pathRefused("/orders\u007f", "control characters");
    for (const enc of ["%00", "%0a", "%0A", "%0d", "%1f", "%1F", "%7f", "%7F"]) pathRefused(`/orders/a${enc}b`, "encoded control characters");
  });

  it("path: no empty, . or .. segments (also percent-encoded)", () => {
    for (const p of ["//", "//orders", "/orders//items", "/orders//"]) pathRefused(p, "empty segments");
    for (const p of ["/.", "/orders/.", "/orders/..", "/../x", "/a/./b", "/a/%2e", "/a/%2E", "/a/%2e%2e/b", "/a/%2E%2e", "/a/.%2e", "/a/%2e./b"]) pathRefused(p, ". or .. segments");
  });

  it("path: no ;, backslash or encoded slash", () => {
    pathRefused("/orders;v=1", "must not contain ;");
    pathRefused("/orders/a;b/c", "must not contain ;");
    pathRefused("/orders\\items", "backslash");
    for (const enc of ["%2F", "%2f", "%5C", "%5c"]) pathRefused(`/orders/a${enc}b`, "encoded slash");
  });

  it("path: percent escapes are well-formed, other characters ASCII", () => {
    pathRefused("/orders/%zz", "malformed percent escape");
    pathRefused("/orders/100%", "malformed percent escape");
    pathRefused("/orders/é", "ASCII");
  });

  it("path: {name} placeholders are whole segments only", () => {
    for (const p of ["/orders/x{id}", "/orders/{id}.json", "/orders/{id}{n}", "/orders/{}", "/orders/{1d}", "/orders/{id", "/orders/id}", "/orders/{a-b}"])
      pathRefused(p, "placeholders must be whole segments");
  });

  it("path rules hold in denied_operations and required_for.operations too", () => {
    refused(api({ denied_operations: [{ path: "/admin/../x" }] }), "apis.x.denied_operations[0].path", ". or .. segments");
    refused(
      api({ allowed_methods: ["POST"], approval: { ...GATE, required_for: { operations: [{ path: "/a%2fb" }] } } }),
      "apis.x.approval.required_for.operations[0].path",
      "encoded slash",
    );
  });

  it("rpc_method: only on jsonrpc or a2a APIs", () => {
    refused(allowed({ path: "/rpc", rpc_method: "orders.list" }), "apis.x.allowed_operations[0].rpc_method", "only valid on jsonrpc or a2a");
    refused(api({ denied_operations: [{ rpc_method: "orders.delete" }] }), "apis.x.denied_operations[0].rpc_method", "only valid on jsonrpc or a2a");
    expect(loads(allowed({ rpc_method: "orders/list.v2_x" }, RPC)).apis.get("x")?.allowed?.[0]?.rpcMethod).toBe("orders/list.v2_x");
  });

  it("rpc_method: a letter, then up to 63 letters, digits, _, /, .", () => {
    loads(allowed({ rpc_method: `a${"b".repeat(63)}` }, RPC));
    for (const bad of ["1list", "_list", "orders-list", "orders list", "", `a${"b".repeat(64)}`, "orders:list", "/list"])
      refused(allowed({ rpc_method: bad }, RPC), "apis.x.allowed_operations[0].rpc_method", "must be a letter");
  });

  it("rpc_method: an A2A 0.3 name is refused under a2a (write the 1.0 name)", () => {
    refused(allowed({ rpc_method: "message/send" }, A2A), "apis.x.allowed_operations[0].rpc_method", "SendMessage");
    refused(allowed({ rpc_method: "tasks/get" }, A2A), "apis.x.allowed_operations[0].rpc_method", "A2A 0.3 name");
    refused(api({ denied_operations: [{ rpc_method: "tasks/cancel" }] }, A2A), "apis.x.denied_operations[0].rpc_method", "CancelTask");
    refused(
      api({ approval: { required_for: { operations: [{ rpc_method: "message/stream" }], methods: ["POST"] }, approvers: ["requester"] } }, A2A),
      "apis.x.approval.required_for.operations[0].rpc_method",
      "SendStreamingMessage",
    );
    loads(allowed({ rpc_method: "GetTask" }, A2A));
    // Under plain jsonrpc the name is just a JSON-RPC method.
    loads(allowed({ rpc_method: "message/send" }, RPC));
  });

  it("a2a_operation: approve or reject, only with protocol a2a", () => {
    const e = loads(allowed({ a2a_operation: "approve", rpc_method: "SendMessage" }, A2A)).apis.get("x")?.allowed?.[0];
    expect(e?.a2aOperation).toBe("approve");
    loads(allowed({ a2a_operation: "reject", rpc_method: "SendStreamingMessage" }, A2A));
    refused(allowed({ a2a_operation: "approve", rpc_method: "SendMessage" }, RPC), "apis.x.allowed_operations[0].a2a_operation", "only valid with protocol a2a");
    refused(allowed({ path: "/a", a2a_operation: "reject" }), "apis.x.allowed_operations[0].a2a_operation", "only valid with protocol a2a");
    refused(allowed({ a2a_operation: "cancel" }, A2A), "apis.x.allowed_operations[0].a2a_operation", "must be approve or reject");
    refused(allowed({ a2a_operation: "Approve" }, A2A), "apis.x.allowed_operations[0].a2a_operation", "must be approve or reject");
  });

  it("a2a_operation with another rpc_method than SendMessage / SendStreamingMessage is refused", () => {
    refused(allowed({ a2a_operation: "approve", rpc_method: "GetTask" }, A2A), "apis.x.allowed_operations[0].a2a_operation", "SendMessage or SendStreamingMessage");
    refused(api({ denied_operations: [{ a2a_operation: "reject", rpc_method: "CancelTask" }] }, A2A), "apis.x.denied_operations[0].a2a_operation", "SendMessage or SendStreamingMessage");
  });
});

describe("loadPolicy: limits, timeouts_ms, pagination", () => {
  it("limits: at least one key, integers of 1 or more, max_response_bytes at most 67108864", () => {
    const l = loads(api({ limits: { max_calls_per_run: 5, rate_per_minute: 1, max_response_bytes: 67108864 } })).apis.get("x")?.limits;
    expect(l).toEqual({ maxCallsPerRun: 5, ratePerMinute: 1, maxResponseBytes: 67108864 });
    expect(loads(api({ limits: { rate_per_minute: 30 } })).apis.get("x")?.limits).toEqual({ ratePerMinute: 30 });
    expect(loads(api({})).apis.get("x")?.limits).toEqual({});
    refused(api({ limits: {} }), "apis.x.limits", "at least one of max_calls_per_run, rate_per_minute, max_response_bytes");
    refused(api({ limits: { max_calls_per_run: 0 } }), "apis.x.limits.max_calls_per_run", "at least 1");
    refused(api({ limits: { rate_per_minute: -3 } }), "apis.x.limits.rate_per_minute", "at least 1");
    refused(api({ limits: { max_calls_per_run: 1.5 } }), "apis.x.limits.max_calls_per_run", "whole number");
    refused(api({ limits: { rate_per_minute: "10" } }), "apis.x.limits.rate_per_minute", "whole number");
    refused(api({ limits: { max_response_bytes: 67108865 } }), "apis.x.limits.max_response_bytes", "at most 67108864");
    refused(api({ limits: { max_response_bytes: 0 } }), "apis.x.limits.max_response_bytes", "at least 1");
    refused(api({ limits: 10 }), "apis.x.limits", "must be a mapping");
  });

  it("timeouts_ms: positive integers, default {connect: 2000, read: 5000}", () => {
    expect(loads(api({})).apis.get("x")?.timeouts).toEqual({ connect: 2000, read: 5000 });
    expect(loads(api({ timeouts_ms: { connect: 100 } })).apis.get("x")?.timeouts).toEqual({ connect: 100, read: 5000 });
    expect(loads(api({ timeouts_ms: { read: 30000 } })).apis.get("x")?.timeouts).toEqual({ connect: 2000, read: 30000 });
    expect(loads(api({ timeouts_ms: { connect: 1, read: 1 } })).apis.get("x")?.timeouts).toEqual({ connect: 1, read: 1 });
    refused(api({ timeouts_ms: { connect: 0 } }), "apis.x.timeouts_ms.connect", "at least 1");
    refused(api({ timeouts_ms: { read: -5 } }), "apis.x.timeouts_ms.read", "at least 1");
    refused(api({ timeouts_ms: { read: 2.5 } }), "apis.x.timeouts_ms.read", "whole number");
    refused(api({ timeouts_ms: { connect: "1s" } }), "apis.x.timeouts_ms.connect", "whole number");
    refused(api({ timeouts_ms: 5000 }), "apis.x.timeouts_ms", "must be a mapping");
  });

  it("pagination: page_size_param and max_page_size both required", () => {
    expect(loads(api({ pagination: { page_size_param: "page[size]", max_page_size: 100 } })).apis.get("x")?.pagination).toEqual({ param: "page[size]", max: 100 });
    expect(loads(api({})).apis.get("x")?.pagination).toBeUndefined();
    refused(api({ pagination: { page_size_param: "limit" } }), "apis.x.pagination.max_page_size", "is required");
    refused(api({ pagination: { max_page_size: 50 } }), "apis.x.pagination.page_size_param", "is required");
    refused(api({ pagination: { page_size_param: "limit", max_page_size: 0 } }), "apis.x.pagination.max_page_size", "at least 1");
    refused(api({ pagination: { page_size_param: "page size", max_page_size: 5 } }), "apis.x.pagination.page_size_param", "query parameter name");
    refused(api({ pagination: { page_size_param: "", max_page_size: 5 } }), "apis.x.pagination.page_size_param", "query parameter name");
  });
});

describe("loadPolicy: protocol a2a", () => {
  it("loads a peer and keeps a2a.path", () => {
    expect(loads(api({}, A2A)).apis.get("x")?.a2aPath).toBe("/a2a");
  });

  it("a2a: required with protocol a2a and invalid otherwise", () => {
    refused(api({ a2a: undefined }, A2A), "apis.x.a2a", "is required with protocol a2a");
    refused(api({ a2a: { path: "/a2a" } }), "apis.x.a2a", "only valid with protocol a2a");
    refused(api({ a2a: { path: "/a2a" } }, RPC), "apis.x.a2a", "only valid with protocol a2a");
    refused(api({ a2a: "/a2a" }, A2A), "apis.x.a2a", "must be a mapping");
  });

  it("a2a.path: missing, empty or templated is refused", () => {
    refused(api({ a2a: {} }, A2A), "apis.x.a2a.path", "is required");
    refused(api({ a2a: { path: "" } }, A2A), "apis.x.a2a.path", "must not be empty");
    refused(api({ a2a: { path: "/agents/{id}" } }, A2A), "apis.x.a2a.path", "literal path");
    refused(api({ a2a: { path: "/agents/x{id}" } }, A2A), "apis.x.a2a.path", "literal path");
    refused(api({ a2a: { path: "a2a" } }, A2A), "apis.x.a2a.path", "must start with /");
    refused(api({ a2a: { path: "/a2a?x=1" } }, A2A), "apis.x.a2a.path", "query or fragment");
    refused(api({ a2a: { path: "/a/../a2a" } }, A2A), "apis.x.a2a.path", ". or .. segments");
    loads(api({ a2a: { path: "/" } }, A2A));
    loads(api({ a2a: { path: "/agents/planner/" } }, A2A));
  });

  it("auth: none is refused with protocol a2a", () => {
    refused(api({ auth: "none", token_env: undefined }, A2A), "apis.x.auth", "none is refused with protocol a2a");
    loads(api({ auth: "forward", token_env: undefined }, A2A));
    loads(api({ auth: "exchange", token_env: undefined, exchange: { audience: "peer" } }, A2A));
  });

  describe("approve neither gated nor denied", () => {
    const peer = (over: Api) => api({ approval: undefined, ...over }, A2A);
    const ungated = (over: Api) => refused(peer(over), "apis.x.approval", "must gate a2a_operation approve");

    it("refuses a peer that may send messages with no gate and no denial", () => {
      ungated({});
      ungated({ allowed_methods: ["POST"] });
      ungated({ allowed_operations: [{ rpc_method: "SendMessage" }] });
      ungated({ allowed_operations: [{ rpc_method: "SendStreamingMessage", methods: ["POST"] }] });
      ungated({ allowed_operations: [{ path: "/a2a" }] });
    });

    it("a gate on {rpc_method: SendMessage} alone does not count", () => {
      ungated({ approval: { required_for: { operations: [{ rpc_method: "SendMessage" }] }, approvers: ["requester"] } });
      ungated({ approval: { required_for: { operations: [{ rpc_method: "SendMessage", a2a_operation: "approve" }] }, approvers: ["requester"] } });
      ungated({ approval: { required_for: { methods: ["GET"] }, approvers: ["requester"] } });
      ungated({ approval: { required_for: { operations: [{ a2a_operation: "approve", methods: ["GET"] }] }, approvers: ["requester"] } });
      ungated({ approval: { required_for: { operations: [{ a2a_operation: "reject" }] }, approvers: ["requester"] } });
    });

    it("passes with a gate whose required_for.methods has POST or *", () => {
      loads(peer({ approval: { required_for: { methods: ["POST"] }, approvers: ["requester"] } }));
      loads(peer({ approval: { required_for: { methods: ["post"] }, approvers: ["requester"] } }));
      loads(peer({ approval: { required_for: { methods: ["*"] }, approvers: ["role:ops"] } }));
      loads(peer({ approval: [{ required_for: { methods: ["GET"] }, approvers: ["requester"] }, { required_for: { methods: ["POST"] }, approvers: ["requester"] }] }));
    });

    it("passes with an entry {a2a_operation: approve} in required_for.operations", () => {
      loads(peer({ approval: { required_for: { operations: [{ a2a_operation: "approve" }] }, approvers: ["requester"] } }));
      loads(peer({ approval: { required_for: { operations: [{ a2a_operation: "approve", methods: ["POST"] }] }, approvers: ["requester"] } }));
    });

    it("passes with a denial of approve messages (or of both send methods)", () => {
      loads(peer({ denied_operations: [{ a2a_operation: "approve" }] }));
      loads(peer({ denied_operations: [{ rpc_method: "SendMessage" }, { rpc_method: "SendStreamingMessage" }] }));
    });

    it("denying one send method alone does not count", () => {
      ungated({ denied_operations: [{ rpc_method: "SendMessage" }] });
    });

    it("passes when the allow-list cannot send a message", () => {
      loads(peer({ allowed_methods: ["GET"] }));
      loads(peer({ allowed_methods: "read-only" }));
      loads(peer({ allowed_operations: [{ rpc_method: "GetTask" }, { rpc_method: "CancelTask" }] }));
      loads(peer({ allowed_operations: [{ rpc_method: "SendMessage", a2a_operation: "reject" }] }));
      loads(peer({ allowed_operations: [{ path: "/a2a", methods: ["GET"] }] }));
    });

    // Spec 8: a denial covers "a call naming its operationId"; a call with another label is not
    // covered (judge.ts covers()), so a denial pinned to an operationId does not deny every approve
    // message. document.ts approveGatedOrDenied counts it anyway (the gate side requires
    // operationId === undefined, the denial side does not).
    it("a denial pinned to an operationId does not count as denying approve", () => {
      ungated({ denied_operations: [{ a2a_operation: "approve", operationId: "approveTask" }] });
    });

    it("denials of the send methods pinned to an operationId do not count", () => {
      ungated({ denied_operations: [{ rpc_method: "SendMessage", operationId: "send" }, { rpc_method: "SendStreamingMessage", operationId: "stream" }] });
    });
  });
});

describe("loadPolicy: approval rules", () => {
  const withRule = (rule: unknown, over: Api = {}) => api({ allowed_methods: ["GET", "POST", "DELETE"], approval: rule, ...over });
  const gateOf = (text: string, i = 0) => loads(text).apis.get("x")?.rules[i]?.gate;

  it("is one mapping or a non-empty list of mappings", () => {
    expect(loads(withRule(GATE)).apis.get("x")?.rules).toHaveLength(1);
    const two = loads(withRule([GATE, { required_for: { methods: ["DELETE"] }, approvers: ["role:admins"] }])).apis.get("x")?.rules;
    expect(two?.map((r) => r.gate.rule)).toEqual([0, 1]);
    refused(withRule([]), "apis.x.approval", "must not be empty");
    refused(withRule("requester"), "apis.x.approval", "rule or a non-empty list of rules");
    refusedWithin(withRule(["requester"]), "apis.x.approval");
  });

  it("places problems at approval (one rule) or approval[i] (a list)", () => {
    refused(withRule({ ...GATE, decide_with: "sometimes" }), "apis.x.approval.decide_with", "must be direct or relayed");
    refused(withRule([GATE, { ...GATE, decide_with: "sometimes" }]), "apis.x.approval[1].decide_with", "must be direct or relayed");
  });

  it("required_for: required, with methods and/or operations", () => {
    refusedWithin(withRule({ approvers: ["requester"] }), "apis.x.approval");
    refused(withRule({ required_for: {}, approvers: ["requester"] }), "apis.x.approval.required_for", "methods and/or operations");
    refused(withRule({ required_for: { methods: [] }, approvers: ["requester"] }), "apis.x.approval.required_for.methods", "must not be empty");
    refused(withRule({ required_for: { operations: [] }, approvers: ["requester"] }), "apis.x.approval.required_for.operations", "must not be empty");
    refused(withRule({ required_for: { methods: ["*", "POST"] }, approvers: ["requester"] }), "apis.x.approval.required_for.methods[0]", "must be one of");
    refused(withRule({ required_for: { methods: ["FETCH"] }, approvers: ["requester"] }), "apis.x.approval.required_for.methods[0]", "must be one of");
    refused(withRule({ required_for: { operations: [{ methods: ["POST"] }] }, approvers: ["requester"] }), "apis.x.approval.required_for.operations[0]", "needs operationId or path");
    const star = loads(withRule({ required_for: { methods: ["*"] }, approvers: ["requester"] })).apis.get("x")?.rules[0];
    expect(star?.methods).toBe("*");
    const both = loads(withRule({ required_for: { methods: ["delete"], operations: [{ path: "/orders", methods: ["POST"] }] }, approvers: ["requester"] })).apis.get("x")?.rules[0];
    expect([...(both?.methods as Set<string>)]).toEqual(["DELETE"]);
    expect(both?.operations).toHaveLength(1);
  });

  it("approvers: requester and/or role:<name> (1-256 characters, no spaces or commas)", () => {
    expect(gateOf(withRule({ ...GATE, approvers: ["role:ops", "requester"] }))?.approvers).toEqual(["requester", "role:ops"]);
    gateOf(withRule({ ...GATE, approvers: ["role:" + "r".repeat(256)] }));
    gateOf(withRule({ ...GATE, approvers: ["role:support-leads.eu"] }));
    refusedWithin(withRule({ required_for: { methods: ["POST"] } }), "apis.x.approval");
    refused(withRule({ ...GATE, approvers: [] }), "apis.x.approval.approvers", "must not be empty");
    refusedWithin(withRule({ ...GATE, approvers: "requester" }), "apis.x.approval");
    for (const [i, bad] of [[0, "admin"], [0, "role:"], [0, "role:a b"], [0, "role:a,b"], [0, `role:${"r".repeat(257)}`], [0, "Requester"], [0, "user:alice"], [1, "role:x\u0001"], [1, "role:x\u0085"]] as const) {
      const approvers = i === 0 ? [bad] : ["requester", bad];
      refused(withRule({ ...GATE, approvers }), `apis.x.approval.approvers[${i}]`, "must be requester or role:<name>");
    }
  });

  it("timeout_s: an integer 30-86400, default 900", () => {
    expect(gateOf(withRule(GATE))?.timeoutS).toBe(900);
    expect(gateOf(withRule({ ...GATE, timeout_s: 30 }))?.timeoutS).toBe(30);
    expect(gateOf(withRule({ ...GATE, timeout_s: 86400 }))?.timeoutS).toBe(86400);
    for (const bad of [29, 86401, 0, -1]) expect(problemsOf(withRule({ ...GATE, timeout_s: bad })).some((p) => p.place === "apis.x.approval.timeout_s")).toBe(true);
    refusedWithin(withRule({ ...GATE, timeout_s: 60.5 }), "apis.x.approval");
    refusedWithin(withRule({ ...GATE, timeout_s: "600" }), "apis.x.approval");
  });

  // The message for an out-of-range timeout_s is "must be a whole number" (schema.ts gives
  // z.number a message that also applies to .min(30)/.max(86400), which have none of their own).
  it("timeout_s out of range says so (not 'must be a whole number')", () => {
    refused(withRule({ ...GATE, timeout_s: 10 }), "apis.x.approval.timeout_s", /30/);
    refused(withRule({ ...GATE, timeout_s: 90000 }), "apis.x.approval.timeout_s", /86400/);
  });

  it("decide_with: direct (default) or relayed; step_up is refused, others too", () => {
    expect(gateOf(withRule(GATE))?.decideWith).toBe("direct");
    expect(gateOf(withRule({ ...GATE, decide_with: "direct" }))?.decideWith).toBe("direct");
    refused(withRule({ ...GATE, decide_with: "step_up" }), "apis.x.approval.decide_with", "step_up is reserved");
    refused(withRule({ ...GATE, decide_with: "Direct" }), "apis.x.approval.decide_with", "must be direct or relayed");
    refused(withRule({ ...GATE, decide_with: "delegated" }), "apis.x.approval.decide_with", "must be direct or relayed");
    refusedWithin(withRule({ ...GATE, decide_with: 1 }), "apis.x.approval");
  });

  it("relayed: needs requester in approvers and a non-empty relayers list of agent ids", () => {
    const relayed = { ...GATE, decide_with: "relayed", relayers: ["agent-b", "spiffe://corp/agents/planner"] };
    const gate = gateOf(withRule(relayed));
    expect(gate).toMatchObject({ decideWith: "relayed", relayers: ["agent-b", "spiffe://corp/agents/planner"] });
    gateOf(withRule({ ...relayed, approvers: ["role:ops", "requester"], relayers: ["a".repeat(256)] }));
    refused(withRule({ ...relayed, relayers: undefined }), "apis.x.approval.relayers", "is required with decide_with relayed");
    refused(withRule({ ...relayed, relayers: [] }), "apis.x.approval.relayers", "must not be empty");
    for (const bad of ["agent b", "a,b", "", "a".repeat(257), "tab\tx", "ctl\u0001", "nel\u0085"]) refused(withRule({ ...relayed, relayers: ["ok", bad] }), "apis.x.approval.relayers", "agent ids");
    refused(withRule({ ...relayed, approvers: ["role:ops"] }), "apis.x.approval.approvers", "must include requester");
    refused(withRule([GATE, { ...relayed, relayers: undefined }]), "apis.x.approval[1].relayers", "is required with decide_with relayed");
    refused(withRule([GATE, { ...relayed, approvers: ["role:ops"] }]), "apis.x.approval[1].approvers", "must include requester");
  });

  it("relayers: refused without decide_with relayed", () => {
    refused(withRule({ ...GATE, relayers: ["agent-b"] }), "apis.x.approval.relayers", "only valid with decide_with relayed");
    refused(withRule({ ...GATE, decide_with: "direct", relayers: [] }), "apis.x.approval.relayers", "only valid with decide_with relayed");
    refused(withRule([GATE, { ...GATE, relayers: ["agent-b"] }]), "apis.x.approval[1].relayers", "only valid with decide_with relayed");
    refusedWithin(withRule({ ...GATE, decide_with: "relayed", relayers: "agent-b" }), "apis.x.approval");
  });

  // Regression: a missing or ill-typed key of a single rule is reported as "must be a rule or a non-empty list of rules" on apis.x.approval.
  it("places a missing or ill-typed key of a single rule precisely", () => {
    refused(withRule({ approvers: ["requester"] }), "apis.x.approval.required_for", "is required");
    refused(withRule({ required_for: { methods: ["POST"] } }), "apis.x.approval.approvers", "is required");
    refused(withRule({ ...GATE, approvers: "requester" }), "apis.x.approval.approvers", "must be a list");
    refused(withRule({ ...GATE, timeout_s: 60.5 }), "apis.x.approval.timeout_s", "whole number");
    refused(withRule({ ...GATE, decide_with: 1 }), "apis.x.approval.decide_with", "must be direct or relayed");
    refused(withRule({ ...GATE, decide_with: "relayed", relayers: "agent-b" }), "apis.x.approval.relayers", "must be a list");
  });

  it("places a missing or ill-typed key of a rule in a list precisely", () => {
    refused(withRule(["requester"]), "apis.x.approval[0]", "must be a mapping");
    refused(withRule([GATE, { approvers: ["requester"] }]), "apis.x.approval[1].required_for", "is required");
    refused(withRule([GATE, { ...GATE, timeout_s: "600" }]), "apis.x.approval[1].timeout_s", "whole number");
  });

  it("rules that decide alike share a key; different approvers do not", () => {
    const rules = loads(
      withRule([
        { required_for: { methods: ["POST"] }, approvers: ["requester", "role:ops"] },
        { required_for: { methods: ["DELETE"] }, approvers: ["role:ops", "requester"], timeout_s: 60 },
        { required_for: { operations: [{ path: "/x" }] }, approvers: ["requester"] },
      ]),
    ).apis.get("x")?.rules;
    expect(rules?.[0]?.gate.key).toBe(rules?.[1]?.gate.key);
    expect(rules?.[0]?.gate.key).not.toBe(rules?.[2]?.gate.key);
  });
});

describe("loadPolicy: a full-featured document", () => {
  const FULL = `
# Every key at least once.
apis:
  orders:
    description: Orders of the shop
    protocol: http
    base_url_env: ORDERS_URL
    auth: bearer
    token_env: ORDERS_TOKEN
    allowed_methods: [get, HEAD, post, DELETE]
    allowed_operations:
      - {operationId: listOrders, methods: [GET], path: /orders}
      - {operationId: getOrder, methods: [GET, HEAD], path: "/orders/{order_id}/"}
      - {operationId: createOrder, methods: [POST], path: /orders}
      - {operationId: cancelOrder, methods: [DELETE], path: "/orders/{order_id}"}
    denied_operations:
      - {path: /orders/export}
    openapi: openapi/orders.yaml
    timeouts_ms: {connect: 500}
    pagination: {page_size_param: limit, max_page_size: 100}
    limits: {max_calls_per_run: 10, rate_per_minute: 60, max_response_bytes: 1048576}
    approval:
      - required_for: {methods: [POST]}
        approvers: [requester, "role:shop-admins"]
      - required_for:
          operations: [{operationId: cancelOrder}]
        approvers: ["role:shop-admins"]
        timeout_s: 3600
  users:
    base_url_env: USERS_URL
    auth: forward
    forward_header: X-User-Token
    forward_audience: users-api
    allowed_methods: read-only
  billing:
    base_url_env: BILLING_URL
    auth: exchange
    exchange:
      audience: billing
      scope: invoices:read
      resource: https://billing.example/api
    allowed_methods: ["*"]
    approval:
      required_for: {methods: ["*"]}
      approvers: [requester]
      decide_with: relayed
      relayers: [agent-planner]
  ledger:
    protocol: jsonrpc
    base_url_env: LEDGER_URL
    auth: none
    allowed_methods: [POST]
    allowed_operations:
      - {rpc_method: ledger.balance}
      - {rpc_method: ledger.transfer, path: /rpc}
    denied_operations:
      - {rpc_method: ledger.close}
  peer:
    protocol: a2a
    a2a: {path: /a2a/v1}
    base_url_env: PEER_URL
    auth: bearer
    token_env: PEER_TOKEN
    allowed_methods: [GET, POST]
    allowed_operations:
      - {rpc_method: SendMessage}
      - {rpc_method: GetTask}
      - {methods: [GET], path: /.well-known/agent-card.json}
    approval:
      required_for:
        operations: [{a2a_operation: approve}]
      approvers: [requester]
`;

  it("loads and compiles", () => {
    const policy = loadPolicy(FULL);
    expect([...policy.apis.keys()]).toEqual(["orders", "users", "billing", "ledger", "peer"]);

    const orders = policy.apis.get("orders")!;
    expect(orders).toMatchObject({ name: "orders", description: "Orders of the shop", protocol: "http", baseUrlEnv: "ORDERS_URL", auth: "bearer", tokenEnv: "ORDERS_TOKEN" });
    expect(orders.allowedMethods).toEqual(new Set(["GET", "HEAD", "POST", "DELETE"]));
    expect(orders.forwardHeader).toBe("Authorization");
    expect(orders.timeouts).toEqual({ connect: 500, read: 5000 });
    expect(orders.pagination).toEqual({ param: "limit", max: 100 });
    expect(orders.limits).toEqual({ maxCallsPerRun: 10, ratePerMinute: 60, maxResponseBytes: 1048576 });
    expect(orders.openapi).toBe("openapi/orders.yaml");
    expect(orders.allowed).toHaveLength(4);
    expect(orders.allowed?.[1]).toMatchObject({ operationId: "getOrder", methods: new Set(["GET", "HEAD"]) });
    expect(orders.allowed?.[1]?.path?.strict).toEqual(["orders", null]);
    expect(orders.denied[0]?.path?.loose).toEqual(["orders", "export"]);
    expect(orders.rules.map((r) => r.gate.timeoutS)).toEqual([900, 3600]);
    expect(orders.rules[0]?.gate).toMatchObject({ rule: 0, approvers: ["requester", "role:shop-admins"], decideWith: "direct", relayers: [] });
    expect(orders.rules[1]?.operations[0]?.operationId).toBe("cancelOrder");

    const users = policy.apis.get("users")!;
    expect(users).toMatchObject({ auth: "forward", forwardHeader: "X-User-Token", forwardAudience: "users-api", tokenEnv: undefined });
    expect(users.allowedMethods).toEqual(new Set(["GET", "HEAD"]));
    expect(users.timeouts).toEqual({ connect: 2000, read: 5000 });
    expect(users.rules).toEqual([]);
    expect(users.allowed).toBeUndefined();

    const billing = policy.apis.get("billing")!;
    expect(billing.exchange).toEqual({ audience: "billing", scope: "invoices:read", resource: "https://billing.example/api", allow_actorless: false });
    expect(billing.forwardHeader).toBe("Authorization");
    expect(billing.allowedMethods.size).toBe(7);
    expect(billing.rules[0]).toMatchObject({ methods: "*", gate: { decideWith: "relayed", relayers: ["agent-planner"], timeoutS: 900 } });

    const ledger = policy.apis.get("ledger")!;
    expect(ledger.protocol).toBe("jsonrpc");
    expect(ledger.allowed?.map((e) => e.rpcMethod)).toEqual(["ledger.balance", "ledger.transfer"]);

    const peer = policy.apis.get("peer")!;
    expect(peer).toMatchObject({ protocol: "a2a", a2aPath: "/a2a/v1" });
    expect(peer.rules[0]?.operations[0]?.a2aOperation).toBe("approve");
  });
});
