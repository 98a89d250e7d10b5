/** What a refused request's error says (judge-request.ts over judge.ts): each reason once, then "nothing was sent" once. */
import { describe, expect, it } from "vitest";
import { loadPolicy } from "../../src/policy/document.js";
import { judgeRequest } from "../../src/policy/judge-request.js";
import { buildLabelIndex } from "../../src/policy/labels.js";

const POLICY = `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    allowed_methods: [GET, POST]
    denied_operations: [{ path: /admin }]
    approval:
      - required_for: { methods: [POST] }
        approvers: [requester]
      - required_for: { operations: [{ path: /orders }] }
        approvers: ["role:ops"]
`;

describe("judgeRequest's refusals", () => {
  const policy = loadPolicy(POLICY);
  const labels = buildLabelIndex(policy, new Map());
  const refusal = (method: string, path: string) => {
    try {
      judgeRequest(policy, labels, "orders", { method, path });
    } catch (error) {
      return (error as Error).message;
    }
    return "allowed";
  };

  it("name the rule once and end with one 'nothing was sent'", () => {
    const cases: [string, string, RegExp][] = [
      ["POST", "/orders", /^the call matches approval rules of API orders with different approvers or decide_with; nothing was sent$/],
      ["DELETE", "/orders", /^method DELETE is not in allowed_methods of API orders; nothing was sent$/],
      ["GET", "/admin", /^the call is denied by denied_operations of API orders; nothing was sent$/],
    ];
    for (const [method, path, expected] of cases) expect(refusal(method, path), `${method} ${path}`).toMatch(expected);
    expect(refusal("GET", "/orders")).toBe("allowed");
  });
});
