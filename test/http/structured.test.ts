import { afterEach, describe, expect, it } from "vitest";
import { schemaProblems } from "../../src/agent/structured.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { answerText, chat, makeApp, type TestApp } from "../helpers.js";

const SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "Answer",
  type: "object",
  properties: { city: { type: "string", minLength: 1 }, temperature: { type: "number" } },
  required: ["city", "temperature"],
  additionalProperties: false,
};

let app: TestApp;
let store: Store;
afterEach(async () => app?.close());

async function setup(strategy: string) {
  store = createMemoryStore();
  app = await makeApp({ RESPONSE_FORMAT_STRATEGY: strategy }, { store, responseSchema: SCHEMA });
}

for (const strategy of ["provider", "tool", "auto"]) {
  describe(`structured answers (${strategy})`, () => {
    it("streams only the fitting answer as one delta, with structured_response in message.end", async () => {
      await setup(strategy);
      const { events } = await chat(app, { message: '/json {"city": 5}\n/json {"city":"Paris","temperature":21.5}', thread_id: `s-${strategy}` });
      const deltas = events.filter((e) => e.event === "message.delta");
      expect(deltas).toHaveLength(1);
      expect(JSON.parse(deltas[0]!.data.text)).toEqual({ city: "Paris", temperature: 21.5 });
      const end = events.at(-1)!;
      expect(end.data).toMatchObject({ status: "ok", structured_response: { city: "Paris", temperature: 21.5 } });
      expect(events.some((e) => e.event === "tool.call" && e.data.name === "final_answer")).toBe(false);
      const messages = await store.getMessages(`s-${strategy}`);
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(JSON.stringify(messages)).not.toContain('"city":5');
    });

    it("ends with invalid_structured_response after three wrong tries, keeping none of them", async () => {
      await setup(strategy);
      const { events } = await chat(app, { message: '/json {"city": 1}\n/json {"nope": true}\n/json [1]', thread_id: `f-${strategy}` });
      expect(events.filter((e) => e.event === "message.delta")).toHaveLength(0);
      const last = events.at(-1)!;
      expect(last.event).toBe("error");
      expect(last.data.code).toBe("invalid_structured_response");
      const messages = await store.getMessages(`f-${strategy}`);
      expect(messages.map((m) => m.role)).toEqual(["user"]);
    });
  });
}

describe("response schema file", () => {
  it("accepts every allowed keyword", () => {
    const schema = {
      $schema: "x", $id: "x", $comment: "x", title: "t", description: "d", type: "object",
      properties: {
        a: { type: "string", minLength: 1, maxLength: 5, pattern: "^a", format: "email", default: "a", examples: ["a"], deprecated: false, readOnly: false, writeOnly: false },
        b: { type: "number", minimum: 0, maximum: 9, exclusiveMinimum: -1, exclusiveMaximum: 10, multipleOf: 1 },
        c: { type: "array", items: { enum: [1, 2] }, minItems: 0, maxItems: 3, uniqueItems: true },
        d: { anyOf: [{ const: 1 }, { $ref: "#/$defs/x" }] },
        e: { oneOf: [{ type: "null" }, { $ref: "#/definitions/y" }] },
        f: { allOf: [{ type: "object", minProperties: 0, maxProperties: 2 }], not: { type: "string" } },
      },
      required: ["a"],
      additionalProperties: false,
      $defs: { x: { type: "string" } },
      definitions: { y: { type: "boolean" } },
    };
    expect(schemaProblems(schema)).toEqual([]);
  });

  it.each(["if", "then", "patternProperties", "dependentRequired", "prefixItems", "contains", "unevaluatedProperties", "$dynamicRef"])(
    "refuses the keyword %s, naming it",
    async (keyword) => {
      const schema = { type: "object", properties: { a: { type: "string", [keyword]: {} } } };
      expect(schemaProblems(schema).join()).toContain(keyword);
      await expect(makeApp({}, { responseSchema: schema })).rejects.toThrow(keyword);
    },
  );

  it("refuses $ref outside its own $defs and a root that is not an object", () => {
    expect(schemaProblems({ type: "object", properties: { a: { $ref: "https://x/schema" } } }).join()).toContain("$ref");
    expect(schemaProblems({ type: "object", properties: { a: { $ref: "#/$defs/missing" } } }).join()).toContain("does not exist");
    expect(schemaProblems({ type: "array" }).join()).toContain("root");
  });

  it("RESPONSE_SCHEMA_PATH must exist when named; none disables", async () => {
    await expect(makeApp({ RESPONSE_SCHEMA_PATH: "/nonexistent/schema.json" })).rejects.toThrow(/RESPONSE_SCHEMA_PATH/);
    // A file there that cannot be read is named by the setting and the errno code, never the path.
    const unreadable = Object.assign(new Error("EACCES: permission denied, open '/srv/secret-dir/schema.json'"), { code: "EACCES" });
    const refused = makeApp({ RESPONSE_SCHEMA_PATH: "/srv/secret-dir/schema.json" }, { readText: async (path) => (path.endsWith("schema.json") ? Promise.reject(unreadable) : undefined) });
    await expect(refused).rejects.toThrow(/^RESPONSE_SCHEMA_PATH names a file that cannot be read \(EACCES\)\.$/);
    app = await makeApp({ RESPONSE_SCHEMA_PATH: "none" });
    expect(answerText((await chat(app, { message: "hi" })).events)).toBe("echo: hi");
  });
});

describe("strategy auto picks the path per provider", () => {
  /** A model that records its requests and answers with the final_answer tool or JSON text. */
  function recording(structuredOutput: boolean) {
    const requests: { tools: string[]; responseSchema: unknown }[] = [];
    const model = {
      provider: structuredOutput ? "openai" : "anthropic",
      name: "m",
      structuredOutput,
      async *stream(request: import("../../src/index.js").ModelRequest) {
        requests.push({ tools: request.tools.map((t) => t.name), responseSchema: request.responseSchema });
        const answer = '{"city":"Oslo","temperature":3}';
        if (request.tools.some((t) => t.name === "final_answer")) yield { type: "tool_call" as const, id: "c1", name: "final_answer", arguments: answer };
        else yield { type: "text" as const, text: answer };
      },
    };
    return { model, requests };
  }

  it("uses the provider's structured output when the model supports it with tools bound", async () => {
    const { model, requests } = recording(true);
    app = await makeApp({ RESPONSE_FORMAT_STRATEGY: "auto" }, { model, responseSchema: SCHEMA });
    const { events } = await chat(app, { message: "weather?" });
    expect(events.at(-1)!.data.structured_response).toEqual({ city: "Oslo", temperature: 3 });
    expect(requests[0]!.responseSchema).toMatchObject({ schema: SCHEMA });
    expect(requests[0]!.tools).not.toContain("final_answer");
  });

  it("falls back to the final_answer tool otherwise, never shown as a tool.call", async () => {
    const { model, requests } = recording(false);
    app = await makeApp({ RESPONSE_FORMAT_STRATEGY: "auto" }, { model, responseSchema: SCHEMA });
    const { events } = await chat(app, { message: "weather?" });
    expect(events.at(-1)!.data.structured_response).toEqual({ city: "Oslo", temperature: 3 });
    expect(requests[0]!.responseSchema).toBeUndefined();
    expect(requests[0]!.tools).toContain("final_answer");
    expect(events.some((e) => e.event === "tool.call")).toBe(false);
  });

  it("strategy provider stops startup for a model that cannot send the schema", async () => {
    const { model } = recording(false);
    await expect(makeApp({ RESPONSE_FORMAT_STRATEGY: "provider" }, { model, responseSchema: SCHEMA })).rejects.toThrow(/cannot send the response schema/);
  });
});
