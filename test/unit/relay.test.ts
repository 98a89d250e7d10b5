import { describe, expect, it } from "vitest";
import { decidedRelay, relayOf } from "../../src/approvals/relay.js";

const reported = {
  approval_id: "b-1",
  api: "orders",
  method: "POST",
  path: "/orders",
  operation_id: null,
  rpc_method: null,
  a2a_operation: null,
  query: { q: "1" },
  body: { item: "book" },
  reason: "create_order: buy",
  expires_at: "2026-01-01T00:10:00+00:00",
  digest: `sha256:${"a".repeat(64)}`,
  decide_with: "relayed",
  relayers: ["agent-a"],
  nested: null,
  effect: null,
};

describe("relayOf", () => {
  it("makes the peer's own call the effect, with nobody between, and expires 5 s before the peer's approval", () => {
    const relay = relayOf("b", "peer-card", reported)!;
    expect(relay.nested).toMatchObject({ agent: "b", approval_id: "b-1", reported_by: "peer-card", decide_with: "relayed", nested: null, call: { api: "orders", method: "POST", path: "/orders", body: { item: "book" }, query: { q: "1" } } });
    expect(relay.effect).toEqual({ agent: "b", via: [], api: "orders", method: "POST", path: "/orders", operation_id: null, rpc_method: null, a2a_operation: null, query: { q: "1" }, body: { item: "book" } });
    expect(relay.expiresBy).toBe("2026-01-01T00:09:55.000+00:00");
  });

  it("a peer that relays in turn: the effect is the peer's effect, one agent further (via nearest first)", () => {
    const inner = relayOf("c", "c-card", reported)!;
    const fromB = { ...reported, approval_id: "b-2", api: "c", path: "/a2a/app", rpc_method: "SendMessage", a2a_operation: "approve", nested: inner.nested, effect: inner.effect };
    const relay = relayOf("b", "b-card", fromB)!;
    expect(relay.effect).toMatchObject({ agent: "c", via: ["b"], api: "orders", path: "/orders" });
    expect(relay.nested).toMatchObject({ agent: "b", approval_id: "b-2", call: { api: "c", a2a_operation: "approve" }, nested: { agent: "c", approval_id: "b-1" } });
    const further = relayOf("a", "a-card", { ...fromB, approval_id: "x", nested: relay.nested, effect: relay.effect })!;
    expect(further.effect).toMatchObject({ agent: "c", via: ["a", "b"] });
  });

  it("refuses a report without an id, a digest or an expiry", () => {
    for (const key of ["approval_id", "digest", "expires_at"]) expect(relayOf("b", null, { ...reported, [key]: null })).toBeUndefined();
  });
});

describe("decidedRelay", () => {
  it("drops the query and body of every nested call and of the effect", () => {
    const inner = relayOf("c", null, reported)!;
    const outer = relayOf("b", null, { ...reported, nested: inner.nested, effect: inner.effect })!;
    const decided = decidedRelay(outer.nested, outer.effect)! as { nested: any; effect: any };
    expect(decided.nested.call).toMatchObject({ query: null, body: null, path: "/orders" });
    expect(decided.nested.nested.call).toMatchObject({ query: null, body: null });
    expect(decided.effect).toMatchObject({ query: null, body: null, agent: "c", via: ["b"] });
    expect(decidedRelay(null, null)).toBeUndefined();
  });
});

describe("an input-required task naming a relayed decision (spec 4.5)", () => {
  it("its text part names the call that will really happen, the agent making it and the agents between", async () => {
    const { awaiting } = await import("../../src/a2a/task-fields.js");
    const inner = relayOf("c", null, reported)!;
    const outer = relayOf("b", null, { ...reported, nested: inner.nested, effect: inner.effect })!;
    const fields = awaiting(["x"], [{ approval_id: "x", method: "POST", path: "/a2a/app", api: "b", body: null, nested: outer.nested, effect: outer.effect }]);
    const text = (fields.status_parts![0] as { text: string }).text;
    expect(text).toBe('POST /a2a/app on API b waits for approval x; it approves POST /orders on API orders by agent c via b with body {"item":"book"}');
    const plain = awaiting(["y"], [{ approval_id: "y", method: "POST", path: "/orders", api: "orders", body: null, effect: null }]);
    expect((plain.status_parts![0] as { text: string }).text).toBe("POST /orders on API orders waits for approval y");
  });
});
