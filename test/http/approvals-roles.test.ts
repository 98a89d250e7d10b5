import { afterEach, describe, expect, it } from "vitest";
import { chat, makeApp, parseSse, post, type TestApp } from "../helpers.js";
import { actor, bearer, bearerWordPolicy } from "./support/principals.js";
import { bankPolicy, empty, payTool, recordingUpstream } from "../support/upstream.js";

/** A test auth policy: the bearer token names the principal. */
const authPolicy = bearerWordPolicy({
  alice: { id: "alice" },
  bob: { id: "bob" },
  admin: { id: "root", roles: ["admin"] },
  auditor: { id: "audit", roles: ["auditor"] },
  agent: { id: "alice", actor: actor("agent-a") },
});
const as = bearer;

const bank = recordingUpstream(empty);

let app: TestApp;
afterEach(async () => app?.close());

async function paused(approvers: string, env: Record<string, string> = {}) {
  bank.hits.length = 0;
  app = await makeApp({ BANK_URL: bank.base, AUTH_READ_ACROSS_ROLES: "auditor", ...env }, { policyText: bankPolicy(approvers), tools: [payTool], authPolicy });
  const { events } = await chat(app, { message: "/call pay {}", thread_id: "alice-1" }, as("alice"));
  return events.at(-1)!.data.approval as { approval_id: string; digest: string; body: unknown };
}
const decide = (id: string, who: string, body: Record<string, unknown> = { decision: "approve" }) => app.fetch(post(`/threads/alice-1/approvals/${id}`, body, as(who)));
const list = (who: string) => app.fetch(new Request("http://test/threads/alice-1/approvals", { headers: as(who) }));

describe("who decides", () => {
  it("a role approver decides; the resumed run acts as the requester", async () => {
    const ap = await paused("['role:admin']");
    const alice = await decide(ap.approval_id, "alice");
    expect(alice.status).toBe(403);
    expect(((await alice.json()) as { code: string }).code).toBe("not_an_approver");
    const res = await decide(ap.approval_id, "admin");
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events.at(-1)!.data.status).toBe("ok");
    expect(bank.hits).toHaveLength(1);
    const thread = (await (await app.fetch(new Request("http://test/threads", { headers: as("alice") }))).json()) as { thread_id: string }[];
    expect(thread.map((t) => t.thread_id)).toContain("alice-1");
  });

  it("another principal and a read-across role get 403 not_an_approver", async () => {
    const ap = await paused("[requester]");
    for (const who of ["bob", "auditor", "admin"]) {
      const res = await decide(ap.approval_id, who);
      expect(res.status, who).toBe(403);
      expect(((await res.json()) as { code: string }).code).toBe("not_an_approver");
    }
    expect(bank.hits).toHaveLength(0);
  });

  it("the requester decides only when requester is listed", async () => {
    const ap = await paused("['role:admin']");
    expect((await decide(ap.approval_id, "alice")).status).toBe(403);
  });

  it("a delegated principal deciding a direct approval gets 403 approval_direct_only", async () => {
    bank.hits.length = 0;
    app = await makeApp({ BANK_URL: bank.base, AUTH_ALLOWED_ACTORS: "agent-a" }, { policyText: bankPolicy("[requester]"), tools: [payTool], authPolicy });
    const { events } = await chat(app, { message: "/call pay {}", thread_id: "alice-1" }, as("agent"));
    const ap = events.at(-1)!.data.approval as { approval_id: string; digest: string };
    const res = await decide(ap.approval_id, "agent", { decision: "approve", digest: ap.digest });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe("approval_direct_only");
    expect(bank.hits).toHaveLength(0);
  });
});

describe("who sees approvals", () => {
  it("owner sees all with the call; a decider sees what it may decide; read-across sees them without the call; others 403", async () => {
    await paused("['role:admin']");
    const owner = (await (await list("alice")).json()) as { body: unknown }[];
    expect(owner).toHaveLength(1);
    expect(owner[0]!.body).toEqual({ amount: 5 });
    const decider = (await (await list("admin")).json()) as { body: unknown }[];
    expect(decider).toHaveLength(1);
    expect(decider[0]!.body).toEqual({ amount: 5 });
    const auditor = (await (await list("auditor")).json()) as { body: unknown; query: unknown }[];
    expect(auditor).toHaveLength(1);
    expect(auditor[0]!.body).toBeNull();
    expect((await list("bob")).status).toBe(403);

    const across = (await (await app.fetch(new Request("http://test/approvals", { headers: as("auditor") }))).json()) as unknown[];
    expect(across).toHaveLength(1);
    const mine = (await (await app.fetch(new Request("http://test/approvals", { headers: as("admin") }))).json()) as unknown[];
    expect(mine).toHaveLength(1);
    const none = (await (await app.fetch(new Request("http://test/approvals", { headers: as("bob") }))).json()) as unknown[];
    expect(none).toHaveLength(0);
  });

  it("read-across readers see the call under TRACE_CAPTURE=full", async () => {
    await paused("['role:admin']", { TRACE_CAPTURE: "full" });
    const auditor = (await (await list("auditor")).json()) as { body: unknown }[];
    expect(auditor[0]!.body).toEqual({ amount: 5 });
  });
});
