/** What a refused request's error says (judge-request.ts over judge.ts): each reason once, then "nothing was sent" once. */
import { describe, expect, it } from "vitest";
import { loadPolicy } from "../../src/policy/document.js";
import { judgeRequest } from "../../src/policy/judge-request.js";
import { buildLabelIndex } from "../../src/policy/labels.js";

const POLICY = `
apis:
  tickets:
    denied_operations: [{ path: /admin }]
    base_url_env: TICKETS_URL
    allowed_methods: [GET, POST]
    auth: none
    approval:
      - approvers: [requester]
        required_for: { methods: [POST] }
      - approvers: ["role:ops"]
        required_for: { operations: [{ path: /tickets }] }
`;

describe("judgeRequest's refusals", () => {
  const policy = loadPolicy(POLICY);
  const labels = buildLabelIndex(policy, new Map());
  const refusal = (method: string, path: string) => {
    try {
      judgeRequest(policy, labels, "tickets", { method, path });
    } catch (error) {
      return (error as Error).message;
    }
    return "allowed";
  };

  it("name the rule once and end with one 'nothing was sent'", () => {
    const cases: [string, string, RegExp][] = [
      ["POST", "/tickets", /^the call matches approval rules of API tickets with different approvers or decide_with; nothing was sent$/],
      ["DELETE", "/tickets", /^method DELETE is not in allowed_methods of API tickets; nothing was sent$/],
      ["GET", "/admin", /^the call is denied by denied_operations of API tickets; nothing was sent$/],
    ];
    for (const [method, path, expected] of cases) expect(refusal(method, path), `${method} ${path}`).toMatch(expected);
    expect(refusal("GET", "/tickets")).toBe("allowed");
  });
});

describe("judgeRequest's reading of the request", () => {
  const policy = loadPolicy(`
apis:
  files:
    base_url_env: FILES_URL
    allowed_methods: read-write
    auth: none
`);
  const labels = buildLabelIndex(policy, new Map());
  const judged = (request: Parameters<typeof judgeRequest>[3]) => judgeRequest(policy, labels, "files", request);

  it("takes a method in any case and refuses one the policy cannot name", () => {
    expect(judged({ method: "get", path: "/a" }).method).toBe("GET");
    expect(judged({ method: "Patch", path: "/a" }).method).toBe("PATCH");
    for (const method of ["FETCH", "", "GET ", undefined, 1])
      expect(() => judged({ method: method as string, path: "/a" }), String(method)).toThrow(/not an HTTP method the policy knows/);
  });

  it("fills each path parameter as one segment: unreserved values as written, others encoded, dot segments refused", () => {
    const path = (value: string) => judged({ method: "GET", path: "/files/{name}", pathParams: { name: value } }).path;
    expect(path("a.b-c_d~e")).toBe("/files/a.b-c_d~e");
    expect(path("~x")).toBe("/files/~x");
    expect(path(".env")).toBe("/files/.env");
    expect(path("a b")).toBe("/files/a%20b");
    expect(path("é")).toBe("/files/%C3%A9");
    expect(judged({ method: "GET", path: "/files/{name}", pathParams: { name: ".env" } }).call.segments).toEqual(["files", ".env"]);
    expect(judged({ method: "GET", path: "/files/{name}", pathParams: { name: "%41" } }).call.segments).toEqual(["files", "%2541"]);
    for (const value of [".", "..", "", "a/b"]) expect(() => path(value), value).toThrow(/must be one non-empty segment/);
    // A percent sign in a value is the value's own: it is encoded, never read as an escape.
    expect(path("%2e%2e")).toBe("/files/%252e%252e");
  });
});

