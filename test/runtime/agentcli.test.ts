/**
 * agentcli (CONTRACT 7) as a process against the built service as a process, both on 127.0.0.1:
 * each command, each exit code (0 done, 1 failed/refused/cut, 2 usage, 3 configuration), the
 * stream as it is shown (text, tool calls and results, usage and latency, control characters
 * escaped), --json, the credential never read from an env file, a stream the server cuts, and
 * approvals: the commands printed when nobody can answer, `Approve? [y/N]` on a pseudo-terminal.
 * The gated tool is the example TOOLS_MODULE (examples/tools) against a loopback upstream.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, cliOnTerminal, killChildren, type ServiceProcess, startService } from "../support/cli-process.js";

const KEY = "cli-test-key-0123456789";
const FAKE = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake" };
const AUTH = { AGENTCLI_API_KEY: KEY };

let upstream: Server;
let upstreamUrl: string;
const tickets: { body: string; auth: string | undefined }[] = [];
let svc: ServiceProcess;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      tickets.push({ body, auth: req.headers.authorization });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ id: `T-${tickets.length}` }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}/api`;
  svc = await startService({
    ...FAKE,
    TOOLS_MODULE: "examples/tools/tickets.mjs",
    API_POLICY_PATH: "examples/tools/api-policy.yaml",
    TICKETS_API_URL: upstreamUrl,
    TICKETS_API_TOKEN: "ticket-token",
  });
});
afterAll(async () => {
  killChildren();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

const run = (args: string[], env: Record<string, string> = AUTH, options: { cwd?: string } = {}) => cli([...args, "--url", svc.base], env, options);
const CREATE = (title: string) => `/call create_ticket ${JSON.stringify({ title })}`;

describe("agentcli chat", () => {
  it("streams the answer with the thread, the tool call, its result, usage and latency (exit 0)", async () => {
    const r = await run(["chat", "/call list_tickets {}\n/answer listed"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^\[thread [0-9a-f-]{36}\]$/);
    expect(lines[1]).toBe("→ list_tickets {}");
    expect(lines[2]).toMatch(/^← list_tickets: /);
    expect(lines[3]).toBe("listed");
    expect(lines[4]).toMatch(/^\[ok · tokens \d+ in, \d+ out · \d+ ms\]$/);
  });

  it("continues a thread with --thread and shows what the thread holds with messages", async () => {
    expect((await run(["chat", "first", "--thread", "cli-msgs"])).stdout).toContain("echo: first");
    const second = await run(["chat", "second", "--thread", "cli-msgs"]);
    expect(second.stdout.startsWith("echo: second\n")).toBe(true); // a known thread is not announced again
    const shown = await run(["messages", "cli-msgs"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toBe("user: first\nassistant: echo: first\nuser: second\nassistant: echo: second\n");
  });

  it("escapes control characters the model writes (never sent to the terminal)", async () => {
    const r = await run(["chat", "/answer red\u001b[31m bell\u0007 \u202eevil"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("red\\x1b[31m bell\\x07 \\u202eevil");
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it("--json prints one JSON object per line: each event with its data", async () => {
    const r = await run(["chat", "hello", "--json"]);
    expect(r.code).toBe(0);
    const events = r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ event: "message.start", data: { thread_id: expect.any(String) } });
    expect(events.filter((e) => e.event === "message.delta").map((e) => e.data.text).join("")).toBe("echo: hello");
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok", usage: { input_tokens: expect.any(Number) } } });
  });

  it("a run that fails exits 1 with the error code", async () => {
    const r = await run(["chat", "/error"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/agentcli: the run failed: run_failed: /);
  });

  it("a refused request exits 1 naming the status (422 with the field)", async () => {
    const r = await run(["chat", "hi", "--thread", "bad id!"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/HTTP 422: .*thread_id/);
  });

  it("a service that cannot be reached exits 1", async () => {
    const r = await cli(["threads", "--url", "http://127.0.0.1:9"], AUTH);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
  });
});

describe("a stream the server cuts", () => {
  it("exits 1 when the service dies mid-run (no message.end, no error)", async () => {
    const victim = await startService(FAKE);
    // Killed once the run has started (its thread shown): the stream ends with no last event.
    const r = await cli(["chat", "/sleep 5000\nslow", "--url", victim.base], AUTH, { onStdout: (out) => out.includes("[thread ") && victim.child.kill("SIGKILL") });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^\[thread /);
    expect(r.stderr).toMatch(/agentcli: the (stream ended before the run did \(cut\)|stream broke before the run ended)/);
  });
});

describe("threads, delete, card", () => {
  it("lists threads (text and --json), deletes one, reads the card", async () => {
    await run(["chat", "x", "--thread", "cli-del"]);
    const listed = await run(["threads", "--limit", "100"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^cli-del {2}updated \d{4}-/m);
    const json = await run(["threads", "--json", "--limit", "100"]);
    const rows = json.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(rows).toEqual(expect.arrayContaining([expect.objectContaining({ thread_id: "cli-del" })]));

    const deleted = await run(["delete", "cli-del"]);
    expect(deleted).toMatchObject({ code: 0, stdout: "deleted cli-del\n" });
    const again = await run(["delete", "cli-del"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/HTTP 404/);

    const card = await run(["card"]);
    expect(card.code).toBe(0);
    expect(card.stdout).toMatch(/^app 0\.1\.0\n/);
    expect(card.stdout).toMatch(/^ {2}JSONRPC 1\.0 at http:\/\/127\.0\.0\.1:\d+\/a2a\/app$/m);
    const cardJson = JSON.parse((await run(["card", "--json"])).stdout);
    expect(cardJson).toMatchObject({ name: "app", capabilities: { streaming: true } });
    expect((await run(["card", "nobody"])).code).toBe(1);
  });
});

describe("approvals", () => {
  it("a paused run off a terminal prints the commands to decide (exit 0); approve sends the digest and streams the resumed run", async () => {
    const paused = await run(["chat", CREATE("printer on fire"), "--thread", "cli-appr"]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain("[awaiting approval · ");
    const id = /approval (\S+) waits: POST \/tickets on API tickets \(operation createTicket\)/.exec(paused.stdout)?.[1];
    expect(id).toBeDefined();
    expect(paused.stdout).toContain(`agentcli approve cli-appr ${id} --url ${svc.base} [--comment TEXT]`);
    expect(paused.stdout).toContain(`agentcli reject cli-appr ${id} --url ${svc.base} [--comment TEXT]`);
    expect(paused.stdout).not.toContain("Approve?");

    // A message on the waiting thread is refused (exit 1); what waits is shown with the commands.
    const busy = await run(["chat", "anything else?", "--thread", "cli-appr"]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/HTTP 409: approval_pending: /);
    expect(busy.stdout).toContain(`agentcli approve cli-appr ${id} --url ${svc.base} [--comment TEXT]`);

    const listed = await run(["approvals", "--status", "pending"]);
    expect(listed.stdout).toMatch(new RegExp(`^${id} {2}pending {3}thread cli-appr {2}POST /tickets on tickets`, "m"));
    const json = (await run(["approvals", "--json", "--status", "pending"])).stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(json.find((a) => a.approval_id === id)).toMatchObject({ status: "pending", digest: expect.stringMatching(/^sha256:/) });

    const before = tickets.length;
    const approved = await run(["approve", "cli-appr", id!, "--comment", "ok by me"]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`[approved: approval ${id}; the run resumes]`);
    expect(approved.stdout).toMatch(/← create_ticket: .*T-\d/);
    expect(approved.stdout).toMatch(/\[ok · tokens/);
    expect(tickets.length).toBe(before + 1);

    const decided = (await run(["approvals", "--json", "--status", "approved"])).stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(decided.find((a) => a.approval_id === id)).toMatchObject({ comment: "ok by me" });
    // Deciding again is refused by the service: exit 1.
    const twice = await run(["reject", "cli-appr", id!]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/HTTP 409: .*approval_not_pending|HTTP 409/);
  });

  it("reject: nothing is sent, the tool reads 'not approved'", async () => {
    const paused = await run(["chat", CREATE("rejected one"), "--thread", "cli-rej"]);
    const id = /approval (\S+) waits/.exec(paused.stdout)![1]!;
    const before = tickets.length;
    const rejected = await run(["reject", "cli-rej", id, "--comment", "no"]);
    expect(rejected.code).toBe(0);
    expect(rejected.stdout).toContain(`[rejected: approval ${id}; the run resumes]`);
    expect(rejected.stdout).toMatch(/← create_ticket failed: .*not approved/);
    expect(tickets.length).toBe(before);
  });

  it("an approval that is not there exits 1", async () => {
    await run(["chat", "hi", "--thread", "cli-none"]);
    const r = await run(["approve", "cli-none", "no-such-approval"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no approval no-such-approval on thread cli-none");
  });

  it("on a terminal the caller is asked Approve? [y/N]: y approves and the resumed run streams", async () => {
    const before = tickets.length;
    const pty = cliOnTerminal(["chat", CREATE("asked at the terminal"), "--url", svc.base], AUTH);
    await pty.waitFor(/Approve\? \[y\/N\] /);
    pty.type("y");
    expect(await pty.exited).toBe(0);
    expect(pty.output()).toMatch(/approval \S+ waits: POST \/tickets on API tickets/);
    expect(pty.output()).toMatch(/\[approved: approval \S+; the run resumes\]/);
    expect(pty.output()).toMatch(/\[ok · tokens/);
    expect(pty.output()).not.toContain("agentcli approve");
    expect(tickets.length).toBe(before + 1);
    expect(JSON.parse(tickets.at(-1)!.body)).toMatchObject({ title: "asked at the terminal" });
  });

  it("on a terminal, n (or Enter) rejects; the end of input leaves the approval waiting and prints the commands", async () => {
    const before = tickets.length;
    const no = cliOnTerminal(["chat", CREATE("refused at the terminal"), "--url", svc.base], AUTH);
    await no.waitFor(/Approve\? \[y\/N\] /);
    no.type("n");
    expect(await no.exited).toBe(0);
    expect(no.output()).toMatch(/\[rejected: approval \S+; the run resumes\]/);
    expect(no.output()).toMatch(/create_ticket failed: .*not approved/);
    expect(tickets.length).toBe(before);

    const later = cliOnTerminal(["chat", CREATE("decided later"), "--thread", "cli-later", "--url", svc.base], AUTH);
    await later.waitFor(/Approve\? \[y\/N\] /);
    later.end();
    expect(await later.exited).toBe(0);
    expect(later.output()).toMatch(/agentcli approve cli-later \S+ --url /);
    const pending = (await run(["approvals", "--json", "--status", "pending"])).stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(pending.some((a) => a.thread_id === "cli-later")).toBe(true);
  });

  it("--json on a terminal never prompts", async () => {
    const pty = cliOnTerminal(["chat", CREATE("json at the terminal"), "--json", "--url", svc.base], AUTH);
    expect(await pty.exited).toBe(0);
    expect(pty.output()).not.toContain("Approve?");
    expect(pty.output()).toContain('"status":"awaiting_approval"');
  });
});

describe("the interactive session", () => {
  it("with no message on a terminal, each line is a message on one thread until Ctrl-D", async () => {
    const pty = cliOnTerminal(["chat", "--thread", "cli-session", "--url", svc.base], AUTH);
    await pty.waitFor(/you> /);
    pty.type("first line");
    await pty.waitFor(/echo: first line[\s\S]*you> /);
    const mark = pty.output().length;
    pty.type("/call list_tickets {\"limit\":2}\\");
    await pty.waitFor(/\.\.\.> /, mark);
    pty.type("/answer listed them");
    await pty.waitFor(/listed them[\s\S]*you> /, mark);
    pty.end();
    expect(await pty.exited).toBe(0);
    expect(pty.output()).toContain("→ list_tickets {\"limit\":2}");
    expect(pty.output()).toMatch(/← list_tickets: .*T-\d/);
    const messages = await run(["messages", "cli-session", "--json"]);
    expect(messages.stdout.trimEnd().split("\n").map((l) => JSON.parse(l).role)).toEqual(["user", "assistant", "user", "assistant", "tool", "assistant"]);
  });

  it("with no message and no terminal it is a usage error (exit 2)", async () => {
    const r = await run(["chat"], AUTH);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("chat needs a MESSAGE");
  });
});

describe("credentials, headers and cookies", () => {
  it("never reads AGENTCLI_API_KEY from an env file (401, exit 1, the key never printed)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcli-env-"));
    writeFileSync(join(dir, ".env"), `AGENTCLI_API_KEY=${KEY}\nAGENTCLI_URL=http://127.0.0.1:9\n`);
    const r = await run(["threads"], {}, { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("HTTP 401");
    expect(r.stderr + r.stdout).not.toContain(KEY);
    // The same key from the process environment works.
    expect((await run(["threads"], AUTH, { cwd: dir })).code).toBe(0);
  });

  it("sends --header and --cookie as given, and the bearer key", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const echo = createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader("content-type", "application/json");
      res.end("[]");
    });
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(echo.address() as { port: number }).port}`;
      const r = await cli(["threads", "--url", url, "--header", "X-Tenant: acme", "--header", "X-Trace: 1", "--cookie", "session=abc", "--cookie", "theme=dark"], AUTH);
      expect(r).toMatchObject({ code: 0, stdout: "(no threads)\n" });
      expect(seen[0]).toMatchObject({ "x-tenant": "acme", "x-trace": "1", cookie: "session=abc; theme=dark", authorization: `Bearer ${KEY}` });
    } finally {
      await new Promise((r) => echo.close(r));
    }
  });

  it("a key holding a line break is a configuration problem (exit 3)", async () => {
    const r = await run(["threads"], { AGENTCLI_API_KEY: "abc\ndef" });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("AGENTCLI_API_KEY");
    expect(r.stderr).not.toContain("abc");
  });
});

describe("usage errors exit 2", () => {
  it.each([
    [["chat", "hi", "--bogus"], /Unknown option '--bogus'/],
    [["threads", "--thread", "x"], /threads does not take --thread/],
    [["frobnicate"], /unknown command "frobnicate"/],
    [[], /a command is needed/],
    [["messages"], /messages needs THREAD_ID/],
    [["approve", "t"], /approve needs APPROVAL_ID/],
    [["delete", "a", "b"], /delete takes THREAD_ID; got "b" too/],
    [["approvals", "--status", "maybe"], /--status must be one of pending, approved, rejected, expired/],
    [["threads", "--limit", "0"], /--limit must be a whole number from 1 to 100/],
    [["threads", "--header", "no-colon"], /--header must be 'Name: value'/],
    [["threads", "--cookie", "novalue"], /--cookie must be name=value/],
    [["threads", "--url", "ftp://x"], /--url must be an absolute http\(s\) URL/],
    [["chat", "a", "--thread", "x", "--thread", "y"], /--thread is given twice/],
    [["system"], /system needs a subcommand/],
    [["system", "up", "f.yaml"], /system up needs --env NAME/],
    [["policy", "explain", "api", "GET"], /policy explain needs PATH/],
  ])("%j", async (args, message) => {
    const r = await cli(args as string[], AUTH);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message as RegExp);
  });

  it("--help prints the usage (exit 0)", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("usage: agentcli COMMAND");
    expect(r.stdout).toContain("Exit codes: 0 done, 1 a run that failed, was refused or was cut, 2 usage, 3 configuration.");
  });
});


describe("approvals decided by a role approver (AUTH_POLICY=jwt)", () => {
  const ISS = "https://issuer.test";
  const AUD = "agent-service";
  let jwtSvc: ServiceProcess;
  let userToken: string;
  let adminToken: string;

  beforeAll(async () => {
    const { generateKeyPair, exportSPKI, SignJWT } = await import("jose");
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    const sign = (sub: string, roles: string[]) =>
      new SignJWT({ roles }).setProtectedHeader({ alg: "RS256" }).setSubject(sub).setIssuer(ISS).setAudience(AUD).setIssuedAt().setExpirationTime("1h").sign(privateKey);
    userToken = await sign("user-1", []);
    adminToken = await sign("admin-1", ["admin"]);
    // Opening a ticket waits for the requester or an admin.
    const dir = mkdtempSync(join(tmpdir(), "agentcli-roles-"));
    const policy = join(dir, "api-policy.yaml");
    writeFileSync(
      policy,
      `apis:
  tickets:
    description: Support tickets
    base_url_env: TICKETS_API_URL
    auth: bearer
    token_env: TICKETS_API_TOKEN
    allowed_methods: [GET, POST]
    allowed_operations:
      - {operationId: listTickets, methods: [GET], path: /tickets}
      - {operationId: createTicket, methods: [POST], path: /tickets}
    approval:
      required_for: {operations: [{operationId: createTicket}]}
      approvers: [requester, "role:admin"]
`,
    );
    jwtSvc = await startService({
      MODEL_PROVIDER: "fake",
      MODEL_NAME: "fake",
      AUTH_POLICY: "jwt",
      AUTH_JWT_PUBLIC_KEY: await exportSPKI(publicKey),
      AUTH_JWT_ISSUER: ISS,
      AUTH_JWT_AUDIENCE: AUD,
      AUTH_JWT_ALGORITHMS: "RS256",
      TOOLS_MODULE: "examples/tools/tickets.mjs",
      API_POLICY_PATH: policy,
      TICKETS_API_URL: upstreamUrl,
      TICKETS_API_TOKEN: "ticket-token",
    });
  });

  it("an admin who approves on a terminal is not asked about the requester's next approval: the commands are printed", async () => {
    const script = `${CREATE("first of two")}\n/step\n${CREATE("second of two")}\n/answer both asked`;
    const paused = await cli(["chat", script, "--thread", "cli-roles", "--url", jwtSvc.base], { AGENTCLI_API_KEY: userToken });
    expect(paused.code, paused.stderr).toBe(0);
    const first = /approval (\S+) waits: POST \/tickets/.exec(paused.stdout)![1]!;
    expect(paused.stdout).toContain("approvers: requester, role:admin");

    const before = tickets.length;
    const pty = cliOnTerminal(["approve", "cli-roles", first, "--url", jwtSvc.base], { AGENTCLI_API_KEY: adminToken });
    // Before the fix the admin was asked about the second call (which only its requester or an
    // admin may decide, and the CLI knew only that the rule lists the requester): the service
    // then answered 403. Now the CLI knows the admin decided and is not the run's requester.
    const ended = await Promise.race([pty.exited.then(() => "exited" as const), pty.waitFor(/Approve\? \[y\/N\] /, 0, 30_000).then(() => "asked" as const)]);
    if (ended === "asked") pty.end();
    expect(ended, pty.output()).toBe("exited");
    expect(await pty.exited).toBe(0);
    expect(pty.output()).toContain(`[approved: approval ${first}; the run resumes]`);
    const second = /approval (\S+) waits: POST \/tickets/.exec(pty.output())?.[1];
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(pty.output()).toContain(`agentcli approve cli-roles ${second} --url ${jwtSvc.base} [--comment TEXT]`);
    expect(tickets.length).toBe(before + 1);

    // The requester, on a terminal, is asked about its own run's next approval.
    const own = cliOnTerminal(["chat", "anything?", "--thread", "cli-roles", "--url", jwtSvc.base], { AGENTCLI_API_KEY: userToken });
    await own.waitFor(/Approve\? \[y\/N\] /);
    own.type("y");
    expect(await own.exited).toBe(1); // the message itself was refused (409 approval_pending)
    expect(own.output()).toContain(`[approved: approval ${second}; the run resumes]`);
    expect(tickets.length).toBe(before + 2);
  }, 60_000);
});
