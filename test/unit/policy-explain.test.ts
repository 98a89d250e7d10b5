/**
 * `agentcli policy explain`'s core (src/tooling/policy-explain.ts): the verdict is the service's
 * own judgeRequest, and the steps name the entry that decided, in the judge's order.
 */
import { describe, expect, it } from "vitest";
import { loadPolicy } from "../../src/policy/document.js";
import { buildLabelIndex } from "../../src/policy/labels.js";
import { explainCall, splitTarget } from "../../src/tooling/policy-explain.js";

const POLICY = loadPolicy(`
apis:
  shop:
    base_url_env: SHOP_URL
    auth: none
    allowed_methods: [GET, POST, DELETE]
    allowed_operations:
      - {operationId: listOrders, methods: [GET], path: /orders}
      - {operationId: createOrder, methods: [POST], path: /orders}
      - {methods: [DELETE], path: "/orders/{id}"}
      - {methods: [GET], path: /admin/stats}
    denied_operations:
      - {path: /admin/stats}
    approval:
      - required_for: {methods: [POST]}
        approvers: [requester]
      - required_for: {operations: [{methods: [DELETE], path: "/orders/{id}"}]}
        approvers: ["role:ops"]
        timeout_s: 60
  peer:
    protocol: a2a
    a2a: {path: /a2a/peer}
    base_url_env: PEER_URL
    auth: bearer
    token_env: PEER_TOKEN
    allowed_methods: [GET, POST]
    approval:
      required_for: {operations: [{a2a_operation: approve}]}
      approvers: [requester]
`);
const LABELS = buildLabelIndex(POLICY, new Map());
const explain = (api: string, method: string, path: string, extra: { body?: never; operationId?: string } | Record<string, unknown> = {}) =>
  explainCall(POLICY, LABELS, api, { method, path, ...extra });

describe("policy explain", () => {
  it("a call sent without asking: the allow entry that matched, no gate", () => {
    const e = explain("shop", "get", "/orders", { operationId: "listOrders" });
    expect(e).toMatchObject({ api: "shop", method: "GET", path: "/orders", verdict: "sent", reason: undefined, gate: undefined });
    expect(e.steps).toEqual([
      { place: "allowed_methods", outcome: "passes", detail: "GET is in [GET, POST, DELETE]" },
      { place: "denied_operations", outcome: "passes", detail: "none of 1 covers the call" },
      { place: "allowed_operations[0]", outcome: "matches", detail: "{operationId: listOrders, path: /orders, methods: [GET]}" },
      { place: "approval", outcome: "passes", detail: "no rule covers the call: sent without asking" },
    ]);
  });

  it("a gated call: the rule, its approvers and expiry", () => {
    const e = explain("shop", "POST", "/orders", { body: { item: 1 }, operationId: "createOrder" });
    expect(e.verdict).toBe("gated");
    expect(e.gate).toEqual({ rule: "approval[0]", approvers: ["requester"], decide_with: "direct", relayers: [], timeout_s: 900 });
    expect(e.steps.at(-1)).toEqual({ place: "approval[0]", outcome: "gates", detail: "required_for methods [POST]: approvers requester, decide_with direct, timeout 900 s" });
  });

  it("a method outside allowed_methods is refused there, with the service's reason", () => {
    const e = explain("shop", "PUT", "/orders");
    expect(e).toMatchObject({ verdict: "refused", reason: "method PUT is not in allowed_methods of API shop; nothing was sent" });
    expect(e.steps).toEqual([{ place: "allowed_methods", outcome: "refuses", detail: "PUT is not in [GET, POST, DELETE]" }]);
  });

  it("a denial wins over an allow entry (any case, a trailing slash)", () => {
    const e = explain("shop", "GET", "/ADMIN/stats/");
    expect(e.verdict).toBe("refused");
    expect(e.reason).toContain("denied by denied_operations");
    expect(e.steps.at(-1)).toEqual({ place: "denied_operations[0]", outcome: "refuses", detail: "{path: /admin/stats} covers the call; denials always win" });
  });

  it("a call no allow entry matches (an entry that pins an operationId needs the call to name it)", () => {
    for (const [path, extra] of [["/customers", {}], ["/orders", {}]] as const) {
      const e = explain("shop", "GET", path, extra);
      expect(e.verdict).toBe("refused");
      expect(e.reason).toBe("the call is not in allowed_operations of API shop; nothing was sent");
      expect(e.steps.at(-1)).toMatchObject({ place: "allowed_operations", outcome: "refuses" });
    }
  });

  it("a call two rules with different approvers could gate is refused", () => {
    const policy = loadPolicy(`
apis:
  shop:
    base_url_env: SHOP_URL
    auth: none
    allowed_methods: [DELETE]
    approval:
      - required_for: {methods: [DELETE]}
        approvers: [requester]
      - required_for: {operations: [{path: "/orders/{id}"}]}
        approvers: ["role:ops"]
`);
    const e = explainCall(policy, buildLabelIndex(policy, new Map()), "shop", { method: "DELETE", path: "/orders/7" });
    expect(e.verdict).toBe("refused");
    expect(e.reason).toContain("different approvers");
    expect(e.steps.slice(-2).map((s) => [s.place, s.outcome])).toEqual([
      ["approval[0]", "gates"],
      ["approval[1]", "refuses"],
    ]);
  });

  it("an operation label that stands for another request is refused", () => {
    const e = explain("shop", "GET", "/orders", { operationId: "createOrder" });
    expect(e.verdict).toBe("refused");
    expect(e.reason).toContain("operation_id createOrder does not match the request sent");
    expect(e.steps[0]).toMatchObject({ place: "operationId", outcome: "refuses" });
  });

  it("an A2A message is judged by its JSON-RPC body: an approve message is gated, a plain one is sent", () => {
    const send = (parts: unknown[]) => ({ body: { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { role: "user", parts } } } });
    const approve = explain("peer", "POST", "/a2a/peer", send([{ kind: "data", data: { approval_id: "a1", decision: "approve" } }]));
    expect(approve).toMatchObject({ verdict: "gated", call: { rpc_method: "SendMessage", a2a_operation: "approve" } });
    const plain = explain("peer", "POST", "/a2a/peer", send([{ kind: "text", text: "hi" }]));
    expect(plain).toMatchObject({ verdict: "sent", call: { rpc_method: "SendMessage", a2a_operation: null } });
    const batch = explain("peer", "POST", "/a2a/peer", { body: [] });
    expect(batch).toMatchObject({ verdict: "refused", steps: [] });
    expect(batch.reason).toContain("batches are refused");
  });

  it("an API the policy does not name", () => {
    expect(explain("nope", "GET", "/")).toMatchObject({ verdict: "refused", reason: expect.stringContaining('no API named "nope"'), steps: [] });
  });

  it("splits a query off the path", () => {
    expect(splitTarget("/orders?limit=5&tag=a&tag=b")).toEqual({ path: "/orders", query: { limit: "5", tag: ["a", "b"] } });
    expect(splitTarget("/orders")).toEqual({ path: "/orders", query: undefined });
  });
});
