import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { approvalDigest } from "../../src/approvals/digest.js";
import { defineTool } from "../../src/index.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import type { JsonValue } from "../../src/json.js";
import { answerText, chat, get, KEY, makeApp, parseSse, post, waitFor, type TestApp } from "../helpers.js";
import { recordingUpstream } from "../support/upstream.js";

const upstream = recordingUpstream();
const hits = upstream.hits;

const POLICY = (approvers = "[requester]", extra = "") => `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    allowed_methods: [GET, POST, DELETE]
    approval:
      required_for: { methods: [POST, DELETE] }
      approvers: ${approvers}
      timeout_s: 60
${extra}`;

const createOrder = defineTool({
  name: "create_order",
  description: "creates an order",
  parameters: { type: "object", properties: { item: { type: "string" }, card: { type: "string" } } },
  calls: [{ api: "orders", method: "POST", path: "/orders" }],
  redact: ["card"],
  run: async (args, ctx) => {
    const res = await ctx.api.request("orders", { method: "POST", path: "/orders", query: { source: "agent" }, body: { item: args.item ?? "book", card: args.card ?? "4111" }, redact: ["card"] });
    return { status: res.status, body: res.body };
  },
});
const deleteOrder = defineTool({
  name: "delete_order",
  description: "deletes an order",
  parameters: { type: "object", properties: { id: { type: "string" } } },
  calls: [{ api: "orders", method: "DELETE", path: "/orders/{id}" }],
  run: async (args, ctx) => (await ctx.api.request("orders", { method: "DELETE", path: "/orders/{id}", pathParams: { id: String(args.id) } })).status,
});

let store: Store;
let clock: { t: number; now(): number };
let apps: TestApp[] = [];

async function app(policy = POLICY(), tools = [createOrder, deleteOrder]) {
  const a = await makeApp({ ORDERS_URL: upstream.base }, { store, clock, lease: sharedLease, policyText: policy, tools, sweepIntervalMs: 20 });
  apps.push(a);
  return a;
}
let sharedLease: ReturnType<typeof createMemoryLease>;

beforeEach(() => {
  hits.length = 0;
  store = createMemoryStore();
  clock = { t: Date.parse("2026-11-22T12:00:00Z"), now: () => clock.t };
  sharedLease = createMemoryLease(clock);
});
afterEach(async () => {
  for (const a of apps) await a.close();
  apps = [];
});

async function pause(a: TestApp, message = '/call create_order {"item":"book","card":"4111-secret"}', thread = "t1") {
  const { events } = await chat(a, { message, thread_id: thread });
  const end = events.at(-1)!;
  expect(end.event).toBe("message.end");
  expect(end.data.status).toBe("awaiting_approval");
  return end.data as { approval: Record<string, any>; approvals: Record<string, any>[]; run_id: string };
}

const decide = (a: TestApp, thread: string, id: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  a.fetch(post(`/threads/${thread}/approvals/${id}`, body, headers));

const metric = async (a: TestApp, line: string) => {
  const text = await (await a.fetch(new Request("http://test/metrics"))).text();
  return Number(text.split("\n").find((l) => l.startsWith(line))?.split(" ").at(-1) ?? 0);
};

describe("a gated call pauses the run", () => {
  it("records a pending approval with every field, masks redact= fields and refuses new messages with 409 approval_pending", async () => {
    const a = await app();
    const end = await pause(a);
    const ap = end.approval;
    expect(end.approvals).toHaveLength(1);
    expect(ap).toMatchObject({
      thread_id: "t1",
      run_id: end.run_id,
      status: "pending",
      api: "orders",
      method: "POST",
      path: "/orders",
      operation_id: null,
      rpc_method: null,
      a2a_operation: null,
      query: { source: "agent" },
      body: { item: "book", card: "<redacted>" },
      tool: "create_order",
      approvers: ["requester"],
      requester_actor: null,
      decide_with: "direct",
      decided_by: null,
      decided_via: null,
      nested: null,
      effect: null,
      decided_at: null,
      comment: null,
    });
    // The fake model says nothing with its call: the reason names the call instead (spec 2.3).
    expect(ap.reason).toBe("create_order: POST /orders on API orders (the model gave no reason)");
    expect(ap.requester).toMatch(/^[0-9a-f]{32}$/);
    expect(Date.parse(ap.expires_at) - Date.parse(ap.created_at)).toBe(60_000);
    expect(ap.internal).toBeUndefined();
    expect(JSON.stringify(end)).not.toContain("4111-secret");
    expect(ap.digest).toBe(
      await approvalDigest({ api: "orders", method: "POST", path: "/orders", operation_id: null, rpc_method: null, a2a_operation: null, query: { source: "agent" }, body: { item: "book", card: "<redacted>" } }),
    );
    expect(hits).toHaveLength(0);
    expect((await store.getRun(end.run_id))!.status).toBe("awaiting_approval");

    const { res, json } = await chat(a, { message: "next", thread_id: "t1" });
    expect(res.status).toBe(409);
    expect(json.code).toBe("approval_pending");
    expect(json.approvals.map((x: { approval_id: string }) => x.approval_id)).toEqual([ap.approval_id]);
    expect(await metric(a, 'agent_approvals_total{event="requested"}')).toBe(1);
    expect(await metric(a, 'agent_runs_total{status="awaiting_approval"}')).toBe(1);
  });
});

describe("deciding", () => {
  it("approve sends exactly the recorded call once and streams the resumed run", async () => {
    const a = await app();
    const { approval } = await pause(a);
    const res = await decide(a, "t1", approval.approval_id, { decision: "approve", comment: "ok", digest: approval.digest });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events[0]).toMatchObject({ event: "message.start", data: { approval_id: approval.approval_id, decision: "approve", thread_id: "t1" } });
    expect(events.find((e) => e.event === "tool.result")!.data).toMatchObject({ is_error: false });
    expect(events.at(-1)!.data.status).toBe("ok");
    expect(hits).toEqual([
      { method: "POST", url: "/orders?source=agent", body: JSON.stringify({ item: "book", card: "4111-secret" }), headers: expect.objectContaining({ "idempotency-key": approval.approval_id }) },
    ]);
    const stored = (await store.getApproval(approval.approval_id))!;
    expect(stored).toMatchObject({ status: "approved", comment: "ok", query: null, body: null });
    expect(stored.decided_by).toBe(approval.requester);
    // the thread takes messages again; the call is never sent twice
    const next = await chat(a, { message: "thanks", thread_id: "t1" });
    expect(answerText(next.events)).toBe("echo: thanks");
    expect(hits).toHaveLength(1);
    expect(await metric(a, 'agent_approvals_total{event="approved"}')).toBe(1);
  });

  it("reject sends nothing and the tool reads 'not approved' with the comment", async () => {
    const a = await app();
    const { approval } = await pause(a);
    const res = await decide(a, "t1", approval.approval_id, { decision: "reject", comment: "too expensive" });
    const events = parseSse(await res.text());
    const result = events.find((e) => e.event === "tool.result")!;
    expect(result.data.is_error).toBe(true);
    expect(result.data.result).toContain("not approved");
    expect(result.data.result).toContain("too expensive");
    expect(events.at(-1)!.data.status).toBe("ok");
    expect(hits).toHaveLength(0);
    expect(await metric(a, 'agent_approvals_total{event="rejected"}')).toBe(1);
  });

  it("refuses a wrong digest with 409 approval_digest_mismatch and sends nothing", async () => {
    const a = await app();
    const { approval } = await pause(a);
    const res = await decide(a, "t1", approval.approval_id, { decision: "approve", digest: `sha256:${"0".repeat(64)}` });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { code: string }).code).toBe("approval_digest_mismatch");
    expect((await store.getApproval(approval.approval_id))!.status).toBe("pending");
    expect(hits).toHaveLength(0);
  });

  it("answers 404 approval_not_found, 409 approval_not_pending naming the status, 422 for bad bodies", async () => {
    const a = await app();
    const { approval } = await pause(a);
    const missing = await decide(a, "t1", "nope", { decision: "approve" });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe("approval_not_found");
    for (const body of [{ decision: "maybe" }, { decision: "approve", comment: "x".repeat(1001) }, { decision: "approve", comment: "bell\u0007" }, { decision: "approve", comment: "nel\u0085" }, { decision: "approve", comment: "c1\u009f" }, { decision: "approve", digest: `sha256:${"a".repeat(80)}` }, {}]) {
      const bad = await decide(a, "t1", approval.approval_id, body);
      expect(bad.status, JSON.stringify(body).slice(0, 40)).toBe(422);
    }
    // One entry per broken rule: a comment too long is said once.
    const long = (await (await decide(a, "t1", approval.approval_id, { decision: "approve", comment: "x".repeat(1001) })).json()) as { detail: { type: string; loc: string[] }[] };
    expect(long.detail).toEqual([expect.objectContaining({ type: "string_too_long", loc: ["body", "comment"], ctx: { max_length: 1000 } })]);
    const control = (await (await decide(a, "t1", approval.approval_id, { decision: "approve", comment: "nel\u0085" })).json()) as { detail: { type: string }[] };
    expect(control.detail.map((d) => d.type)).toEqual(["control_characters"]);
    // A digest that is not sha256: + 64 lowercase hex is 422, before any approval is looked at (CONTRACT 5).
    for (const digest of [`sha256:${"A".repeat(64)}`, `sha256:${"a".repeat(63)}`, `sha512:${"a".repeat(64)}`, "a".repeat(71), "sha256:"]) {
      for (const id of [approval.approval_id, "no-such-approval"]) {
        const bad = await decide(a, "t1", id, { decision: "approve", digest });
        expect(bad.status, digest).toBe(422);
        const body = (await bad.json()) as { detail: { loc: string[] }[] };
        expect(body.detail[0]!.loc).toEqual(["body", "digest"]);
        if (digest.length > 10) expect(JSON.stringify(body)).not.toContain(digest);
      }
    }
    await (await decide(a, "t1", approval.approval_id, { decision: "reject" })).text();
    const again = await decide(a, "t1", approval.approval_id, { decision: "approve" });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "approval_not_pending", status: "rejected" });
  });

  it("20 concurrent approvals of one approval: exactly one succeeds and one request reaches the upstream", async () => {
    const a = await app();
    const { approval } = await pause(a);
    const responses = await Promise.all(Array.from({ length: 20 }, () => decide(a, "t1", approval.approval_id, { decision: "approve" })));
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    await ok[0]!.text();
    for (const r of responses.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409);
      expect(((await r.json()) as { code: string }).code).toBe("approval_not_pending");
    }
    expect(hits).toHaveLength(1);
  });
});

describe("two apps on one memory store and lease (replicas in one process)", () => {
  it("an approve on one racing a chat on the other, 30 rounds: every approved call is sent exactly once, and nothing is left due", async () => {
    const a = await app();
    const b = await app();
    const text = async (r: Response) => ({ status: r.status, body: await r.text() });
    const answers: Record<string, number> = {};
    for (let round = 0; round < 30; round++) {
      const thread = `race-${round}`;
      const { approval } = await pause(a, '/call create_order {"item":"book"}', thread);
      const before = hits.length;
      const [decided, chatted] = await Promise.all([
        decide(b, thread, approval.approval_id, { decision: "approve" }).then(text),
        new Promise((r) => setTimeout(r, round % 4)).then(() => a.fetch(post("/chat", { message: "are you done?", thread_id: thread }))).then(text),
      ]);
      expect(decided.status, `round ${round}`).toBe(200);
      const key = chatted.status === 200 ? "200" : `${chatted.status} ${(JSON.parse(chatted.body) as { code?: string }).code}`;
      answers[key] = (answers[key] ?? 0) + 1;
      // The chat never overtakes the decision: it waits its turn or runs after the call was made.
      expect(["200", "409 thread_busy", "409 approval_pending"], `round ${round}`).toContain(key);
      // The approved call goes out once, whichever app, stream or sweep carries it out, and not again.
      await waitFor(() => hits.length === before + 1, 3000);
      await new Promise((r) => setTimeout(r, 60)); // three sweeps more
      expect(hits.slice(before).map((h) => `${h.method} ${h.url}`), `round ${round}`).toEqual(["POST /orders?source=agent"]);
      expect((await store.getApproval(approval.approval_id))?.outcome).toBe("sent");
    }
    expect(await store.dueRuns(100)).toEqual([]);
    expect(await store.listApprovals({ status: "pending", limit: 100, offset: 0 })).toEqual([]);
    console.log("approve vs chat on one memory store, chat answers:", JSON.stringify(answers));
  }, 60_000);
});

describe("redaction", () => {
  it("a tool-level redact list masks exactly like a call-level one (CONTRACT 2, spec 2.3)", async () => {
    const body = (args: Record<string, JsonValue>) => ({ item: args.item ?? "book", card: args.card ?? "4111" });
    const toolLevel = defineTool({
      name: "create_order",
      description: "creates an order",
      parameters: { type: "object", properties: { item: { type: "string" }, card: { type: "string" } } },
      calls: [{ api: "orders", method: "POST", path: "/orders" }],
      redact: ["card"],
      run: async (args, ctx) => (await ctx.api.request("orders", { method: "POST", path: "/orders", query: { source: "agent" }, body: body(args) })).status,
    });
    const callLevel = defineTool({
      ...toolLevel,
      redact: [],
      run: async (args, ctx) => (await ctx.api.request("orders", { method: "POST", path: "/orders", query: { source: "agent" }, body: body(args), redact: ["card"] })).status,
    });
    const viaTool = (await pause(await app(POLICY(), [toolLevel]))).approval;
    store = createMemoryStore();
    const viaCall = (await pause(await app(POLICY(), [callLevel]))).approval;
    expect(viaTool.body).toEqual({ item: "book", card: "<redacted>" });
    expect(viaTool.digest).toBe(viaCall.digest);
    expect(JSON.stringify(viaTool)).not.toContain("4111-secret");
  });
});

describe("expiry", () => {
  it("expires after timeout_s by the clock port: 410 on decide, counted, nothing sent, the run resumes with 'not approved'", async () => {
    const a = await app();
    const { approval } = await pause(a);
    clock.t += 61_000;
    await waitFor(async () => (await store.getApproval(approval.approval_id))!.status === "expired");
    const res = await decide(a, "t1", approval.approval_id, { decision: "approve" });
    expect(res.status).toBe(410);
    expect(((await res.json()) as { code: string }).code).toBe("approval_expired");
    await waitFor(async () => (await store.getMessages("t1")).some((m) => m.role === "tool" && m.content.includes("expired")));
    expect(hits).toHaveLength(0);
    expect(await metric(a, 'agent_approvals_total{event="expired"}')).toBe(1);
    await waitFor(async () => (await chat(a, { message: "again", thread_id: "t1" })).res.status === 200);
  });

  it("the sweep's lines and the run it resumes carry a request id, the requester's principal hash and the thread", async () => {
    const a = await app();
    const { approval } = await pause(a);
    clock.t += 61_000;
    await waitFor(async () => a.logs.some((l) => l.message === "run ended" && l.approval_id === approval.approval_id));
    const expired = a.logs.find((l) => l.message === "approval expired")!;
    expect(expired.request_id).toMatch(/^[0-9a-f]{32}$/);
    const ended = a.logs.find((l) => l.message === "run ended" && l.approval_id === approval.approval_id)!;
    expect(ended).toMatchObject({ request_id: expired.request_id, principal_hash: approval.requester, thread_id: "t1" });
  });
});

describe("a run that cannot resume", () => {
  it("is given up after three failed tries, loudly, instead of being retried by every sweep; nothing is sent", async () => {
    let broken = false;
    const inner = store;
    const gone = () => Promise.reject(new Error("disk gone"));
    store = {
      ...inner,
      getMessages: (id: string) => (broken ? gone() : inner.getMessages(id)),
      getMessagePage: (id, page) => (broken ? gone() : inner.getMessagePage(id, page)),
    };
    const a = await app();
    const { approval, run_id } = await pause(a);
    broken = true;
    await (await decide(a, "t1", approval.approval_id, { decision: "approve" })).text();
    await waitFor(async () => (await inner.getRun(run_id))!.resumed_by !== null, 5_000);
    const resumes = (await inner.listRuns("t1")).filter((r) => r.resumed_from === run_id);
    expect(resumes.map((r) => r.status)).toEqual(["error", "error", "error"]);
    expect((await inner.getRun(run_id))!.resumed_by).toBe(resumes.at(-1)!.run_id);
    expect(a.logs.filter((l) => /failed to resume too often/.test(String(l.message)))).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 200)); // several more sweeps: no more tries
    expect((await inner.listRuns("t1")).filter((r) => r.resumed_from === run_id)).toHaveLength(3);
    expect(hits).toHaveLength(0);
    broken = false;
    expect((await chat(a, { message: "next", thread_id: "t1" })).res.status).toBe(200);
  });
});

describe("decision lines carry the deciding request's id", () => {
  it("approval decided", async () => {
    const a = await app();
    const { approval } = await pause(a);
    await (await a.fetch(post(`/threads/t1/approvals/${approval.approval_id}`, { decision: "reject" }, { "X-Request-ID": "decide-req-1" }))).text();
    expect(a.logs.find((l) => l.message === "approval decided")).toMatchObject({ request_id: "decide-req-1", approval_id: approval.approval_id });
  });
});

describe("a policy change while pending sends nothing", () => {
  const cases: [string, string][] = [
    ["gate removed", `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    allowed_methods: [GET, POST, DELETE]
`],
    ["approvers changed", POLICY("[requester, 'role:admin']")],
    ["API no longer allows the method", `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    allowed_methods: [GET]
`],
  ];
  for (const [name, changed] of cases)
    it(name, async () => {
      const first = await app();
      const { approval } = await pause(first);
      await first.close();
      // Declared calls the new policy refuses would stop startup, so the replica's tools declare none.
      const second = await app(changed, [{ ...createOrder, calls: [] }, { ...deleteOrder, calls: [] }]);
      const res = await decide(second, "t1", approval.approval_id, { decision: "approve" });
      const events = parseSse(await res.text());
      const result = events.find((e) => e.event === "tool.result")!;
      expect(result.data.is_error).toBe(true);
      expect(hits).toHaveLength(0);
      expect(events.at(-1)!.event).toBe("message.end");
    });
});

describe("several gated calls in one turn", () => {
  it("produce several approvals; each decision resumes the run: the approved call is sent and the run pauses again for the one still waiting (spec 3.1, 4.3)", async () => {
    const a = await app();
    const end = await pause(a, '/call create_order {"item":"a"}\n/call delete_order {"id":"7"}');
    expect(end.approvals).toHaveLength(2);
    const [create, del] = end.approvals as { approval_id: string }[];
    const first = await decide(a, "t1", create!.approval_id, { decision: "approve" });
    expect(first.headers.get("content-type")).toMatch(/event-stream/);
    const resumed = parseSse(await first.text());
    expect(resumed[0]).toMatchObject({ event: "message.start", data: { approval_id: create!.approval_id, decision: "approve" } });
    // the approved call is sent and its result streamed; the run waits again for the other one
    expect(resumed.filter((e) => e.event === "tool.result").map((e) => e.data.name)).toEqual(["create_order"]);
    expect(hits.map((h) => h.method)).toEqual(["POST"]);
    const again = resumed.at(-1)!;
    expect(again).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
    expect((again.data.approvals as { approval_id: string }[]).map((x) => x.approval_id)).toEqual([del!.approval_id]);
    const waiting = (await store.getApproval(del!.approval_id))!;
    expect(waiting.run_id).toBe(again.data.run_id);
    // the thread still waits for a decision
    expect((await chat(a, { message: "next", thread_id: "t1" })).res.status).toBe(409);

    const last = await decide(a, "t1", del!.approval_id, { decision: "reject" });
    const events = parseSse(await last.text());
    expect(events.filter((e) => e.event === "tool.result").map((e) => [e.data.name, e.data.is_error])).toEqual([["delete_order", true]]);
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(hits.map((h) => h.method)).toEqual(["POST"]);
  });
});

describe("reading approvals", () => {
  it("lists the thread's and the caller's approvals with status filter and paging", async () => {
    const a = await app();
    const { approval } = await pause(a);
    const thread = (await (await a.fetch(get("/threads/t1/approvals"))).json()) as { approval_id: string }[];
    expect(thread.map((x) => x.approval_id)).toEqual([approval.approval_id]);
    const pending = (await (await a.fetch(get("/approvals?status=pending"))).json()) as { thread_id: string }[];
    expect(pending).toHaveLength(1);
    expect(pending[0]!.thread_id).toBe("t1");
    expect(await (await a.fetch(get("/approvals?status=approved"))).json()).toEqual([]);
    expect((await a.fetch(get("/approvals?limit=0"))).status).toBe(422);
    expect((await a.fetch(get("/threads/none/approvals"))).status).toBe(404);
  });

  it("deleting a thread deletes its approvals", async () => {
    const a = await app();
    const { approval } = await pause(a);
    await (await decide(a, "t1", approval.approval_id, { decision: "reject" })).text();
    expect((await a.fetch(new Request("http://test/threads/t1", { method: "DELETE", headers: { Authorization: `Bearer ${KEY}` } }))).status).toBe(204);
    expect(await store.getApproval(approval.approval_id)).toBeNull();
  });

  it("logs carry no body or query of the call", async () => {
    const a = await app();
    const { approval } = await pause(a);
    await (await decide(a, "t1", approval.approval_id, { decision: "approve" })).text();
    const logs = a.rawLogs.join("\n");
    expect(logs).not.toContain("4111-secret");
    expect(logs).not.toContain("source=agent");
    expect(logs).not.toContain('"item"');
  });
});
