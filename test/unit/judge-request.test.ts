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
