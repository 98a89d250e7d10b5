/**
 * Ownership matrix (spec 4.2, 4.3, 5.5, 5.6, 5.7): who may read, list, continue, delete and
 * decide on a user's own threads and on threads their agent started for them.
 *
 * A custom test auth policy maps bearer words to principals. Alice works directly (`user`) and
 * through two agents (`agentA`, `agentB`); bob is a stranger, carol reads across (auditor) and
 * dave holds the approver role (admin). Fixture: T_user and T_a each hold a paused approval
 * (approvers `[requester, role:admin]`), U_user and U_a are unpaused threads.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CustomPrincipal, defineTool } from "../../src/index.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { chat, makeApp, parseSse, type TestApp } from "../helpers.js";
import { actor, bearer, bearerWordPolicy } from "./support/principals.js";
import { bankPolicy, empty, payTool, recordingUpstream } from "../support/upstream.js";

const FOREIGN = "This thread belongs to another principal.";
const SCOPE_ALL = "scope=all needs a read-across role.";
const NOT_AN_APPROVER = "You are not an approver of this call.";
const DIRECT_ONLY = "This approval is decided directly by the person, not through an agent.";

const PRINCIPALS = {
  user: { id: "alice" },
  agentA: { id: "alice", actor: actor("agent-a") },
  agentB: { id: "alice", actor: actor("agent-b") },
  other: { id: "bob" },
  reader: { id: "carol", roles: ["auditor"] },
  approver: { id: "dave", roles: ["admin"] },
  // Delegated principals holding roles that AUTH_DELEGATED_ROLES lends them (kept, visible to tools).
  agentAdmin: { id: "alice", roles: ["admin"], actor: actor("agent-a") },
  agentAuditor: { id: "alice", roles: ["auditor"], actor: actor("agent-a") },
} satisfies Record<string, CustomPrincipal>;
type Who = keyof typeof PRINCIPALS;
const MATRIX: Who[] = ["user", "agentA", "agentB", "other", "reader", "approver"];

const authPolicy = bearerWordPolicy(PRINCIPALS);
const as = (who: Who) => bearer(who);

const ENV = {
  AUTH_ALLOWED_ACTORS: "agent-a,agent-b",
  AUTH_READ_ACROSS_ROLES: "auditor",
  AUTH_DELEGATED_ROLES: "admin,auditor",
};

const bank = recordingUpstream(empty);

const whoami = defineTool({
  name: "whoami",
  description: "the caller as tools see it",
  parameters: { type: "object" },
  calls: [],
  run: (_a, ctx) => JSON.stringify({ id: ctx.principal.id, roles: ctx.principal.roles, actor: ctx.principal.actor?.id ?? null }),
});
const POLICY = bankPolicy("[requester, 'role:admin']");

const T_USER = "t-user";
const T_A = "t-a";
const U_USER = "u-user";
const U_A = "u-a";
const UNKNOWN = "no-such-thread";

interface Fixture {
  app: TestApp;
  store: Store;
  /** Approval ids by thread. */
  approval: Record<typeof T_USER | typeof T_A, string>;
}

const opened: TestApp[] = [];
afterEach(async () => {
  while (opened.length) await opened.pop()!.close();
});

/** A fresh app with the four threads; closed after the test unless `shared` (then by its describe). */
async function fixture(shared = false): Promise<Fixture> {
  bank.hits.length = 0;
  const store = createMemoryStore();
  const app = await makeApp({ BANK_URL: bank.base, ...ENV }, { policyText: POLICY, tools: [payTool, whoami], authPolicy, store });
  if (!shared) opened.push(app);
  const pause = async (threadId: string, who: Who) => {
    const { res, events } = await chat(app, { message: "/call pay {}", thread_id: threadId }, as(who));
    expect(res.status).toBe(200);
    const approval = events.at(-1)?.data.approval as { approval_id: string } | undefined;
    expect(approval?.approval_id, `paused approval on ${threadId}`).toBeTruthy();
    return approval!.approval_id;
  };
  const approval = { [T_USER]: await pause(T_USER, "user"), [T_A]: await pause(T_A, "agentA") } as Fixture["approval"];
  for (const [id, who] of [[U_USER, "user"], [U_A, "agentA"]] as const) {
    const { res, events } = await chat(app, { message: "hello", thread_id: id }, as(who));
    expect(res.status).toBe(200);
    expect(events.at(-1)?.data.status).toBe("ok");
  }
  expect(bank.hits).toHaveLength(0);
  return { app, store, approval };
}

const req = (method: string, path: string, who: Who, body?: unknown) =>
  new Request(`http://test${path}`, {
    method,
    headers: { ...as(who), ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** Status and, for JSON answers, the body (an SSE answer is read to its end). */
async function send(app: TestApp, r: Request): Promise<{ status: number; body: any; text: string }> {
  const res = await app.fetch(r);
  const text = await res.text();
  const json = (res.headers.get("content-type") ?? "").includes("application/json");
  return { status: res.status, body: json ? JSON.parse(text) : undefined, text };
}

/** An expected answer: status, plus the `detail` (and `code`) of a refusal. */
interface Expect {
  status: number;
  detail?: string;
  code?: string;
}
const ok = (status = 200): Expect => ({ status });
const foreign: Expect = { status: 403, detail: FOREIGN };
const notApprover: Expect = { status: 403, code: "not_an_approver", detail: NOT_AN_APPROVER };
const directOnly: Expect = { status: 403, code: "approval_direct_only", detail: DIRECT_ONLY };

function check(got: { status: number; body: any; text: string }, want: Expect, label: string) {
  expect(got.status, `${label}: ${got.text.slice(0, 300)}`).toBe(want.status);
  if (want.detail !== undefined) expect(got.body?.detail, label).toBe(want.detail);
  if (want.code !== undefined) expect(got.body?.code, label).toBe(want.code);
}

interface Cell {
  who: Who;
  target: string;
  want: Expect;
}
const cellTest = (_cell: Cell) => it;

// ---------------------------------------------------------------------------------------------
// Read-only operations share one fixture.
// ---------------------------------------------------------------------------------------------
describe("read-only operations (one fixture)", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture(true);
  });
  afterAll(async () => f.app.close());

  const READ: Record<Who, Partial<Record<string, Expect>>> = {
    user: { [T_USER]: ok(), [T_A]: ok(), [U_USER]: ok(), [U_A]: ok() },
    agentA: { [T_USER]: foreign, [T_A]: ok(), [U_USER]: foreign, [U_A]: ok() },
    agentB: { [T_USER]: foreign, [T_A]: foreign, [U_USER]: foreign, [U_A]: foreign },
    other: { [T_USER]: foreign, [T_A]: foreign, [U_USER]: foreign, [U_A]: foreign },
    reader: { [T_USER]: ok(), [T_A]: ok(), [U_USER]: ok(), [U_A]: ok() },
    approver: { [T_USER]: foreign, [T_A]: foreign, [U_USER]: foreign, [U_A]: foreign },
    agentAdmin: { [T_USER]: foreign, [T_A]: ok() },
    agentAuditor: { [T_USER]: foreign, [T_A]: ok(), [U_USER]: foreign },
  };
  const readCells: Cell[] = Object.entries(READ).flatMap(([who, row]) =>
    Object.entries(row).map(([target, want]) => ({ who: who as Who, target, want: want! })),
  );
  readCells.push(...[...MATRIX, "agentAdmin" as const].map((who) => ({ who, target: UNKNOWN, want: { status: 404 } })));

  for (const cell of readCells)
    cellTest(cell)(`GET /threads/${cell.target}/messages as ${cell.who} -> ${cell.want.status}`, async () => {
      const got = await send(f.app, req("GET", `/threads/${cell.target}/messages`, cell.who));
      check(got, cell.want, `${cell.who} reads ${cell.target}`);
      if (got.status === 200) expect((got.body as { role: string }[]).some((m) => m.role === "user")).toBe(true);
    });

  // GET /threads (scope=own): which ids appear.
  const LIST: Record<Who, string[]> = {
    user: [T_USER, T_A, U_USER, U_A],
    agentA: [T_A, U_A],
    agentB: [],
    other: [],
    reader: [],
    approver: [],
    agentAdmin: [T_A, U_A],
    agentAuditor: [T_A, U_A],
  };
  for (const [who, ids] of Object.entries(LIST) as [Who, string[]][])
    it(`GET /threads as ${who} lists [${ids.join(", ")}]`, async () => {
      for (const query of ["", "?scope=own"]) {
        const got = await send(f.app, req("GET", `/threads${query}`, who));
        expect(got.status).toBe(200);
        expect((got.body as { thread_id: string }[]).map((t) => t.thread_id).sort(), `${who} ${query}`).toEqual([...ids].sort());
      }
    });

  const SCOPE_ALL_CELLS: Cell[] = (Object.keys(LIST) as Who[]).map((who) => ({
    who,
    target: "all",
    want: who === "reader" ? ok() : { status: 403, detail: SCOPE_ALL },
  }));
  for (const cell of SCOPE_ALL_CELLS)
    cellTest(cell)(`GET /threads?scope=all as ${cell.who} -> ${cell.want.status}`, async () => {
      const got = await send(f.app, req("GET", "/threads?scope=all&limit=100", cell.who));
      check(got, cell.want, `${cell.who} scope=all`);
      if (got.status === 200)
        expect((got.body as { thread_id: string }[]).map((t) => t.thread_id).sort()).toEqual([T_USER, T_A, U_USER, U_A].sort());
    });

  // GET /threads/{id}/approvals: owner and read-across see all, a decider what it may decide, others 403.
  const APPROVALS: Record<Who, Partial<Record<string, Expect>>> = {
    user: { [T_USER]: ok(), [T_A]: ok() },
    agentA: { [T_USER]: foreign, [T_A]: ok() },
    agentB: { [T_USER]: foreign, [T_A]: foreign },
    other: { [T_USER]: foreign, [T_A]: foreign },
    reader: { [T_USER]: ok(), [T_A]: ok() },
    approver: { [T_USER]: ok(), [T_A]: ok() },
    // A delegated principal's lent role never makes it a decider, so it does not see the user's approvals.
    agentAdmin: { [T_USER]: foreign, [T_A]: ok() },
    agentAuditor: { [T_USER]: foreign, [T_A]: ok() },
  };
  const approvalCells: Cell[] = Object.entries(APPROVALS).flatMap(([who, row]) =>
    Object.entries(row).map(([target, want]) => ({ who: who as Who, target, want: want! })),
  );
  for (const cell of approvalCells)
    cellTest(cell)(`GET /threads/${cell.target}/approvals as ${cell.who} -> ${cell.want.status}`, async () => {
      const got = await send(f.app, req("GET", `/threads/${cell.target}/approvals`, cell.who));
      check(got, cell.want, `${cell.who} lists approvals of ${cell.target}`);
      if (got.status === 200) {
        const ids = (got.body as { approval_id: string; status: string }[]).map((a) => a.approval_id);
        expect(ids).toEqual([f.approval[cell.target as typeof T_USER]]);
      }
    });

  // GET /approvals: the caller's own (a delegated principal: only those its agent requested), by role, or all.
  const ACROSS: Record<Who, string[]> = {
    user: [T_USER, T_A],
    agentA: [T_A],
    agentB: [],
    other: [],
    reader: [T_USER, T_A],
    approver: [T_USER, T_A],
    agentAdmin: [T_A],
    agentAuditor: [T_A],
  };
  for (const [who, threads] of Object.entries(ACROSS) as [Who, string[]][])
    it(`GET /approvals as ${who} shows approvals of [${threads.join(", ")}]`, async () => {
      const got = await send(f.app, req("GET", "/approvals", who));
      expect(got.status).toBe(200);
      expect((got.body as { thread_id: string }[]).map((a) => a.thread_id).sort()).toEqual([...threads].sort());
    });

  it("a delegated principal keeps only lent roles, and tools see them (so the refusals above are not for want of a role)", async () => {
    const own = await fixture();
    const { events } = await chat(own.app, { message: "/call whoami {}", thread_id: "whoami-a" }, as("agentAdmin"));
    const result = events.find((e) => e.event === "tool.result")?.data.result as string;
    expect(JSON.parse(result)).toEqual({ id: "alice", roles: ["admin"], actor: "agent-a" });
  });
});

// ---------------------------------------------------------------------------------------------
// Mutating operations: a fresh fixture per cell.
// ---------------------------------------------------------------------------------------------
describe("continue (POST /chat with thread_id), on threads without a pending approval", () => {
  const CONTINUE: Record<Who, Partial<Record<string, Expect>>> = {
    user: { [U_USER]: ok(), [U_A]: ok() },
    agentA: { [U_USER]: foreign, [U_A]: ok() },
    agentB: { [U_USER]: foreign, [U_A]: foreign },
    other: { [U_USER]: foreign, [U_A]: foreign },
    reader: { [U_USER]: foreign, [U_A]: foreign },
    approver: { [U_USER]: foreign, [U_A]: foreign },
    agentAdmin: { [U_USER]: foreign },
    agentAuditor: { [U_USER]: foreign },
  };
  const cells: Cell[] = Object.entries(CONTINUE).flatMap(([who, row]) =>
    Object.entries(row).map(([target, want]) => ({ who: who as Who, target, want: want! })),
  );
  for (const cell of cells)
    cellTest(cell)(`POST /chat thread_id=${cell.target} as ${cell.who} -> ${cell.want.status}`, async () => {
      const f = await fixture();
      const before = await f.store.getThread(cell.target);
      const got = await send(f.app, req("POST", "/chat", cell.who, { message: "more", thread_id: cell.target }));
      check(got, cell.want, `${cell.who} continues ${cell.target}`);
      if (got.status === 200) expect(parseSse(got.text).at(-1)?.data.status).toBe("ok");
      // Continuing never changes who owns the thread or which agent started it.
      expect(await f.store.getThread(cell.target)).toMatchObject({ owner: before!.owner, actor: before!.actor });
      const messages = await f.store.getMessages(cell.target);
      expect(messages.some((m) => m.role === "user" && m.content === "more")).toBe(got.status === 200);
    });

  it("a paused thread refuses to continue with 409 approval_pending for its owner, 403 for others", async () => {
    const f = await fixture();
    const mine = await send(f.app, req("POST", "/chat", "user", { message: "more", thread_id: T_A }));
    expect(mine.status).toBe(409);
    expect(mine.body.code).toBe("approval_pending");
    const theirs = await send(f.app, req("POST", "/chat", "agentB", { message: "more", thread_id: T_A }));
    check(theirs, foreign, "agentB continues T_a");
  });
});

describe("delete (DELETE /threads/{id})", () => {
  const DELETE: Record<Who, Partial<Record<string, Expect>>> = {
    user: { [U_USER]: ok(204), [U_A]: ok(204), [T_A]: ok(204) },
    agentA: { [U_USER]: foreign, [U_A]: ok(204), [T_USER]: foreign },
    agentB: { [U_USER]: foreign, [U_A]: foreign, [T_A]: foreign },
    other: { [U_USER]: foreign, [U_A]: foreign },
    reader: { [U_USER]: foreign, [U_A]: foreign },
    approver: { [U_USER]: foreign, [U_A]: foreign, [T_USER]: foreign },
    agentAdmin: { [U_USER]: foreign },
    agentAuditor: { [U_USER]: foreign },
  };
  const cells: Cell[] = Object.entries(DELETE).flatMap(([who, row]) =>
    Object.entries(row).map(([target, want]) => ({ who: who as Who, target, want: want! })),
  );
  cells.push(...MATRIX.map((who) => ({ who, target: UNKNOWN, want: { status: 404 } })));
  for (const cell of cells)
    cellTest(cell)(`DELETE /threads/${cell.target} as ${cell.who} -> ${cell.want.status}`, async () => {
      const f = await fixture();
      const got = await send(f.app, req("DELETE", `/threads/${cell.target}`, cell.who));
      check(got, cell.want, `${cell.who} deletes ${cell.target}`);
      if (cell.target !== UNKNOWN) {
        expect((await f.store.getThread(cell.target)) === null).toBe(got.status === 204);
        // The owner's view agrees.
        const read = await send(f.app, req("GET", `/threads/${cell.target}/messages`, "user"));
        expect(read.status).toBe(got.status === 204 ? 404 : 200);
      }
    });
});

describe("decide (POST /threads/{id}/approvals/{approval_id}, reject)", () => {
  // Per spec 5.7 the requester is the principal that started the run (subject and actor, 5.6):
  // a delegated principal that is not that principal, or that holds only a lent role, is
  // "anyone else" -> 403 not_an_approver. A delegated requester deciding a direct gate gets
  // approval_direct_only.
  const DECIDE: Record<Who, Partial<Record<string, Expect>>> = {
    user: { [T_USER]: ok(), [T_A]: ok() },
    agentA: { [T_USER]: notApprover, [T_A]: directOnly },
    agentB: { [T_USER]: notApprover, [T_A]: notApprover },
    other: { [T_USER]: notApprover, [T_A]: notApprover },
    reader: { [T_USER]: notApprover, [T_A]: notApprover },
    approver: { [T_USER]: ok(), [T_A]: ok() },
    agentAdmin: { [T_USER]: notApprover, [T_A]: directOnly },
    agentAuditor: { [T_USER]: notApprover },
  };
  const cells: Cell[] = Object.entries(DECIDE).flatMap(([who, row]) =>
    Object.entries(row).map(([target, want]) => {
      return { who: who as Who, target, want: want! };
    }),
  );
  for (const cell of cells)
    cellTest(cell)(`decide on ${cell.target} as ${cell.who} -> ${cell.want.status} ${cell.want.code ?? ""}`, async () => {
      const f = await fixture();
      const id = f.approval[cell.target as typeof T_USER];
      const got = await send(f.app, req("POST", `/threads/${cell.target}/approvals/${id}`, cell.who, { decision: "reject" }));
      check(got, cell.want, `${cell.who} decides on ${cell.target}`);
      const after = await f.store.getApproval(id);
      expect(after?.status).toBe(got.status === 200 ? "rejected" : "pending");
      if (got.status === 200) {
        const events = parseSse(got.text);
        expect(events[0]).toMatchObject({ event: "message.start", data: { approval_id: id, decision: "reject" } });
        expect(events.at(-1)?.event).toBe("message.end");
      }
      expect(bank.hits).toHaveLength(0);
    });

  for (const who of MATRIX) {
    it(`decide as ${who}: 404 for an unknown thread and for an unknown approval`, async () => {
      const f = await fixture();
      const unknownThread = await send(f.app, req("POST", `/threads/${UNKNOWN}/approvals/${f.approval[T_USER]}`, who, { decision: "reject" }));
      expect(unknownThread.status).toBe(404);
      const unknownApproval = await send(f.app, req("POST", `/threads/${T_USER}/approvals/nope`, who, { decision: "reject" }));
      expect(unknownApproval.status).toBe(404);
      expect(unknownApproval.body.code).toBe("approval_not_found");
      // An approval named on another thread is not found there either.
      const crossed = await send(f.app, req("POST", `/threads/${U_USER}/approvals/${f.approval[T_USER]}`, who, { decision: "reject" }));
      expect(crossed.status).toBe(404);
      expect(crossed.body.code).toBe("approval_not_found");
    });
  }

  it("the approver's role lets it decide but not read the thread it decided on", async () => {
    const f = await fixture();
    const id = f.approval[T_USER];
    const seen = await send(f.app, req("GET", `/threads/${T_USER}/approvals`, "approver"));
    expect(seen.status).toBe(200);
    expect((seen.body as { approval_id: string }[]).map((a) => a.approval_id)).toEqual([id]);
    const decided = await send(f.app, req("POST", `/threads/${T_USER}/approvals/${id}`, "approver", { decision: "reject" }));
    expect(decided.status).toBe(200);
    check(await send(f.app, req("GET", `/threads/${T_USER}/messages`, "approver")), foreign, "approver reads T_user");
  });

  // Spec 5.7: "The resumed run acts as the requester". The requester of T_a's approval is alice
  // through agent-a; when alice decides directly, the run that resumes should still carry the
  // actor agent-a (a role approver's decision already does: the requester is rebuilt).
  const resumedActor = (decider: Who) =>
    it(`the run resumed after ${decider} decides T_a's approval acts as the requester (actor agent-a)`, async () => {
      const f = await fixture();
      const id = f.approval[T_A];
      const got = await send(f.app, req("POST", `/threads/${T_A}/approvals/${id}`, decider, { decision: "reject" }));
      expect(got.status).toBe(200);
      const resumed = (await f.store.listRuns(T_A)).find((r) => r.resumed_from !== null);
      expect(resumed?.actor).toBe("agent-a");
    });
  resumedActor("approver");
  // Alice calling directly shares the requester's hash but not its actor: the run still resumes as
  // alice through agent-a.
  resumedActor("user");
});
