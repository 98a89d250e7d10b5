/**
 * The pieces of tools from OpenAPI that need no app: names, the schema the model is offered (a
 * $ref cycle, 3.0 and 3.1 forms, dropped keywords), and which parts of an operation can be
 * offered. The end-to-end tests are in test/http/openapi-tools.test.ts.
 */
import { describe, expect, it } from "vitest";
import { snakeCase, toolName } from "../../src/agent/tools/openapi/naming.js";
import { readOperation } from "../../src/agent/tools/openapi/operation.js";
import { modelSchema, Unsupported } from "../../src/agent/tools/openapi/schema.js";
import { operationsOf, parseOpenApi } from "../../src/policy/openapi.js";

describe("tool names", () => {
  it.each([
    ["getOrder", "get_order"],
    ["GetOrderByID", "get_order_by_id"],
    ["list-orders.v2", "list_orders_v2"],
    ["HTTPStatus2xx", "http_status2xx"],
    ["__weird__", "weird"],
  ])("%s is %s in snake_case", (id, snake) => expect(snakeCase(id)).toBe(snake));

  it("is <api>_<operationId in snake_case>, or from the method and path without one", () => {
    expect(toolName("orders", "GET", "/orders/{order_id}", "getOrder")).toBe("orders_get_order");
    expect(toolName("orders", "GET", "/orders/{order_id}/items", undefined)).toBe("orders_get_orders_order_id_items");
    expect(toolName("orders", "DELETE", "/", undefined)).toBe("orders_delete");
    expect(toolName("orders", "POST", "/x", "!!!")).toBe("orders_post_x");
  });

  it("cuts a long name to 64 characters with a hash of the whole, so two long names still differ", () => {
    const a = toolName("orders", "GET", "/", `get${"VeryLong".repeat(10)}A`);
    const b = toolName("orders", "GET", "/", `get${"VeryLong".repeat(10)}B`);
    for (const n of [a, b]) expect(n).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(a).toHaveLength(64);
    expect(a).not.toBe(b);
  });
});

describe("the schema the model is offered", () => {
  const v31 = (root: unknown = {}) => ({ root, v30: false });
  const v30 = (root: unknown = {}) => ({ root, v30: true });

  it("inlines a recursive $ref once and accepts anything below it", () => {
    const root = { components: { schemas: { Node: { type: "object", description: "A node.", properties: { child: { $ref: "#/components/schemas/Node" } } } } } };
    expect(modelSchema(v31(root), { $ref: "#/components/schemas/Node" })).toEqual({
      type: "object",
      description: "A node.",
      properties: { child: { description: "A node." } },
    });
  });

  it("refuses a $ref to another file or to nowhere", () => {
    expect(() => modelSchema(v31(), { $ref: "other.yaml#/X" })).toThrow(Unsupported);
    expect(() => modelSchema(v31(), { $ref: "#/components/schemas/Missing" })).toThrow(/points nowhere/);
  });

  it("reads JSON Pointer escapes in a $ref", () => {
    const root = { components: { schemas: { "a/b~c": { type: "string" } } } };
    expect(modelSchema(v31(root), { $ref: "#/components/schemas/a~1b~0c" })).toEqual({ type: "string" });
  });

  it("turns 3.0 nullable and boolean exclusive bounds into 2020-12", () => {
    expect(modelSchema(v30(), { type: "integer", nullable: true, minimum: 1, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: false })).toEqual({
      type: ["integer", "null"],
      exclusiveMinimum: 1,
      maximum: 9,
    });
    expect(modelSchema(v30(), { type: "string", enum: ["a"], nullable: true })).toEqual({ type: ["string", "null"], enum: ["a", null] });
    expect(modelSchema(v30(), { oneOf: [{ type: "string" }], nullable: true })).toEqual({ oneOf: [{ type: "string" }, { type: "null" }] });
  });

  it("keeps 3.1 type arrays, applies $ref siblings, ignores them under 3.0", () => {
    const root = { components: { schemas: { Id: { type: "string" } } } };
    expect(modelSchema(v31(), { type: ["integer", "null"] })).toEqual({ type: ["integer", "null"] });
    expect(modelSchema(v31(root), { $ref: "#/components/schemas/Id", description: "The id." })).toEqual({ type: "string", description: "The id." });
    expect(modelSchema(v31(root), { $ref: "#/components/schemas/Id", maxLength: 4 })).toEqual({ allOf: [{ type: "string" }, { maxLength: 4 }] });
    expect(modelSchema(v30(root), { $ref: "#/components/schemas/Id", description: "The id." })).toEqual({ type: "string" });
  });

  it("keeps only keywords the validator and providers take, and drops readOnly properties", () => {
    const schema = modelSchema(v31(), {
      type: "object",
      required: ["id", "name"],
      properties: { id: { type: "string", readOnly: true }, name: { type: "string", writeOnly: true, example: "x", "x-a": 1, pattern: "(" } },
      discriminator: { propertyName: "name" },
      xml: { name: "n" },
      externalDocs: { url: "https://example.com" },
      deprecated: true,
    });
    expect(schema).toEqual({ type: "object", required: ["name"], properties: { name: { type: "string" } } });
  });

  it("stops an operation whose inlined schemas grow too large", () => {
    const schemas: Record<string, unknown> = { L0: { type: "string" } };
    for (let i = 1; i <= 14; i++) schemas[`L${i}`] = { type: "object", properties: { a: { $ref: `#/components/schemas/L${i - 1}` }, b: { $ref: `#/components/schemas/L${i - 1}` } } };
    expect(() => modelSchema(v31({ components: { schemas } }), { $ref: "#/components/schemas/L14" })).toThrow(/over 5000 nodes/);
  });
});

describe("reading an operation", () => {
  const read = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const root = { openapi: "3.1.0", paths, ...extra };
    const [entry] = operationsOf(root);
    return readOperation({ root, v30: false }, entry!);
  };

  it("puts path and query parameters at the top and the JSON body in body", () => {
    const r = read({
      "/a/{id}": {
        post: {
          parameters: [
            { name: "id", in: "path", required: true, schema: { type: "integer" } },
            { name: "q", in: "query", required: true, schema: { type: "string" } },
            { name: "X-Opt", in: "header", schema: { type: "string" } },
          ],
          requestBody: { content: { "application/merge-patch+json": { schema: { type: "object" } } } },
        },
      },
    });
    expect(r.unusable).toEqual([]);
    expect(r.plan?.parameters).toEqual({
      type: "object",
      properties: { id: { type: "integer" }, q: { type: "string" }, body: { type: "object" } },
      required: ["id", "q"],
      additionalProperties: false,
    });
    expect(r.plan?.body).toEqual({ mediaType: "application/merge-patch+json" });
  });

  it("leaves out an optional part it cannot send and refuses a required one", () => {
    const optional = read({ "/a": { post: { parameters: [{ name: "f", in: "query", schema: { type: "object" } }], requestBody: { content: { "text/plain": {} } } } } });
    expect(optional.plan).toBeDefined();
    expect(optional.leftOut).toEqual(["query parameter f: an object value", "a request body that is not JSON (text/plain)"]);
    const required = read({ "/a": { post: { parameters: [{ name: "c", in: "cookie", required: true }], requestBody: { required: true, content: { "multipart/form-data": {} } } } } });
    expect(required.plan).toBeUndefined();
    expect(required.unusable).toEqual(["it needs the cookie parameter c", "a file upload (multipart/form-data)"]);
  });

  it("refuses two arguments of one name and a path it cannot judge", () => {
    const twins = read({ "/a/{body}": { post: { requestBody: { content: { "application/json": {} } } } } });
    expect(twins.unusable).toEqual(["two of its arguments are named body"]);
    const partial = read({ "/a/{name}.json": { get: {} } });
    expect(partial.unusable).toEqual(["its path placeholders must be whole segments like {name}"]);
  });

  it("refuses an operation whose parameters (its own or its path item's) are not a list, rather than reading none", () => {
    for (const paths of [{ "/a": { get: { parameters: 5 } } }, { "/a": { parameters: { name: "q", in: "query" }, get: {} } }]) {
      const r = read(paths);
      expect(r.plan).toBeUndefined();
      expect(r.unusable).toEqual(["its parameters are not a list"]);
    }
    // An empty `parameters:` key in YAML is null: none.
    expect(read({ "/a": { parameters: null, get: { parameters: null } } }).plan).toBeDefined();
  });

  it("refuses a request body that is not an object, or a required one without content; leaves out an optional one without", () => {
    expect(read({ "/a": { post: { requestBody: 5 } } }).unusable).toEqual(["its request body is not an object"]);
    expect(read({ "/a": { post: { requestBody: { required: true, content: {} } } } }).unusable).toEqual(["a request body without content"]);
    const optional = read({ "/a": { post: { requestBody: { description: "x" } } } });
    expect(optional.plan).toBeDefined();
    expect(optional.leftOut).toEqual(["a request body without content"]);
    expect(read({ "/a": { post: { requestBody: null } } }).plan?.parameters).toEqual({ type: "object", properties: {}, additionalProperties: false });
  });

  it("follows a path item $ref", () => {
    const doc = parseOpenApi(JSON.stringify({ openapi: "3.1.0", paths: { "/a": { $ref: "#/components/pathItems/A" } }, components: { pathItems: { A: { get: { operationId: "getA" } } } } }));
    expect(doc.operations).toEqual([{ operationId: "getA", method: "GET", path: "/a" }]);
    expect(doc.version).toBe("3.1.0");
  });
});
