/**
 * agentcli's configuration commands as processes: `system check` (exit 0 on a valid three-agent
 * file, 3 with each problem as `place: message`), `system graph` (text and Mermaid), `system up`
 * (two agents of a port_base environment started as dist/node.js processes, a chat on the first
 * reaching the second through ask_<agent>, both stopped on SIGTERM), and `policy explain`
 * (allowed, gated, refused, and a broken policy).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, cli, killChildren } from "../support/cli-process.js";
import { waitFor } from "../helpers.js";
import { freePort } from "../support/service-process.js";

afterAll(killChildren);

function workspace(projects: readonly string[], system: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "agentcli-system-"));
  for (const p of projects) mkdirSync(join(dir, p), { recursive: true });
  const file = join(dir, "system.yaml");
  writeFileSync(file, system);
  return { dir, file };
}

const THREE = `version: 1
name: shop
agents:
  front:
    project: front
    calls: [billing, {agent: catalog, approvals: deny, calls: [ask, status, cancel]}]
  billing:
    project: billing
    calls: [catalog]
  catalog:
    project: catalog
environments:
  local: {port_base: 8100}
`;

describe("agentcli system check and graph", () => {
  it("a valid three-agent file: exit 0", async () => {
    const { file } = workspace(["front", "billing", "catalog"], THREE);
    const r = await cli(["system", "check", file, "--env", "local"]);
    expect(r).toMatchObject({ code: 0, stdout: "ok: system shop: 3 agents, 3 calls between them\n", stderr: "" });
    const json = JSON.parse((await cli(["system", "check", file, "--json"])).stdout);
    expect(json).toEqual({ ok: true, file, name: "shop", agents: ["front", "billing", "catalog"], edges: 3 });
  });

  it("an unusable file: exit 3, every problem as place: message", async () => {
    const { file } = workspace(["front", "billing"], THREE.replace("calls: [catalog]", "calls: [catalog, ledger, billing]"));
    const r = await cli(["system", "check", file, "--env", "prod"]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr.split("\n")).toEqual([
      "agents.billing.calls[1]: unknown agent ledger",
      "agents.billing.calls[2]: is the agent itself; an agent does not call itself",
      "agents.catalog.project: there is no directory catalog (relative to the system file)",
      '--env: unknown environment "prod"',
      `agentcli: the system file ${file} is unusable: 4 problems`,
      "",
    ]);
    const json = await cli(["system", "check", file, "--json"]);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, problems: expect.arrayContaining([{ place: "agents.billing.calls[1]", message: "unknown agent ledger" }]) });
  });

  it("a file that is not there: exit 3", async () => {
    const r = await cli(["system", "check", "/nonexistent/system.yaml"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("/nonexistent/system.yaml: there is no such file");
  });

  it("graph: the calls as text, then as Mermaid; --mermaid alone", async () => {
    const { file } = workspace(["front", "billing", "catalog"], THREE);
    const r = await cli(["system", "graph", file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("  front   -> billing   [ask, status; approvals relay; auth bearer]\n");
    expect(r.stdout).toContain("```mermaid\nflowchart LR\n");
    expect(r.stdout).toContain('  front -->|"ask, status, cancel; approvals deny; auth bearer"| catalog\n');
    const m = await cli(["system", "graph", file, "--mermaid"]);
    expect(m.stdout.startsWith("flowchart LR\n")).toBe(true);
    expect(m.stdout).not.toContain("```");
    expect((await cli(["system", "graph", "/nonexistent.yaml"])).code).toBe(3);
  });
});

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe("agentcli system up", () => {
  it("starts both agents of a two-agent file; a chat on the first reaches the second; SIGTERM stops them", async () => {
    const base = await freePort(2);
    const { dir, file } = workspace(["front", "back"], `version: 1
agents:
  front:
    project: front
    calls: [{agent: back, description: Answers every question}]
  back:
    project: back
environments:
  local: {port_base: ${base}}
`);
    const key = "system-up-key-0123456789";
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", API_KEY: key, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_FORMAT: "json", TMPDIR: dir };
    const up = spawn(process.execPath, [CLI, "system", "up", file, "--env", "local"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    up.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
    up.stderr!.setEncoding("utf8").on("data", (s: string) => (out += s));
    const exited = new Promise<number | null>((r) => up.once("exit", (code) => r(code)));
    try {
      await new Promise<void>((ready, fail) => {
        const timer = setTimeout(() => fail(new Error(`system up did not come up:\n${out}`)), 40_000);
        const check = () => /Ctrl-C stops them all/.test(out) && (clearTimeout(timer), ready());
        up.stdout!.on("data", check);
        void exited.then(() => fail(new Error(`system up exited:\n${out}`)));
      });
      expect(out).toMatch(new RegExp(`^front +http://127\\.0\\.0\\.1:${base} {2}A2A /a2a/front {2}calls back$`, "m"));
      expect(out).toMatch(new RegExp(`^back +http://127\\.0\\.0\\.1:${base + 1} {2}A2A /a2a/back$`, "m"));
      expect(out).toContain("API key of every agent: $API_KEY");
      expect(out).toMatch(/\[front\] \{.*listening on/);
      // The generated policy sits in the session's directory while the system runs.
      expect(readdirSync(dir).filter((n) => n.startsWith("agentcli-system-")).length).toBe(1);

      const chat = await cli(["chat", '/call ask_back {"message":"hello from front"}', "--url", `http://127.0.0.1:${base}`], { AGENTCLI_API_KEY: key });
      expect(chat.code, `${chat.stdout}\n${chat.stderr}\n${out}`).toBe(0);
      expect(chat.stdout).toContain('→ ask_back {"message":"hello from front"}');
      expect(chat.stdout).toMatch(/← ask_back: .*"state":"completed".*echo: hello from front/);
      // The second agent has the thread its caller started there.
      const threads = await cli(["threads", "--json", "--url", `http://127.0.0.1:${base + 1}`], { AGENTCLI_API_KEY: key });
      expect(threads.stdout.trim().split("\n")).toHaveLength(1);
    } finally {
      up.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(await accepts(base)).toBe(false);
    expect(await accepts(base + 1)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.startsWith("agentcli-system-"))).toEqual([]);
  });

  /**
   * Each agent's TOOLS_MODULE notes in a shared log that its agent is starting, then holds the
   * start until the test drops a release file (or throws, to fail that agent's start).
   */
  function heldAgents(names: readonly string[], parallel: number, portBase: number, hold: (name: string) => "wait" | "go" | "fail") {
    const { dir, file } = workspace(names, `version: 1\nagents:\n${names.map((n) => `  ${n}: {project: ${n}}\n`).join("")}deploy: {parallel: ${parallel}}\nenvironments:\n  local: {port_base: ${portBase}}\n`);
    const log = join(dir, "starts.log");
    writeFileSync(log, "");
    const dist = pathToFileURL(resolve("dist/index.js")).href;
    for (const name of names) {
      const release = join(dir, `release-${name}`);
      const how = hold(name);
      writeFileSync(join(dir, name, ".env"), "TOOLS_MODULE=./tools.mjs\n");
      writeFileSync(
        join(dir, name, "tools.mjs"),
        `import { appendFileSync, existsSync } from "node:fs";
import { defineTool } from ${JSON.stringify(dist)};
appendFileSync(${JSON.stringify(log)}, ${JSON.stringify(`${name}\n`)});
${how === "fail" ? 'throw new Error("held agent fails");' : ""}
${how === "wait" ? `while (!existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 25));` : ""}
export default [defineTool({ name: "noop", description: "does nothing", parameters: { type: "object", properties: {} }, calls: [], run: async () => "ok" })];
`,
      );
    }
    const starts = () => readFileSync(log, "utf8").split("\n").filter(Boolean);
    const release = (name: string) => writeFileSync(join(dir, `release-${name}`), "");
    return { dir, file, starts, release };
  }

  function up(file: string, dir: string) {
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", API_KEY: "system-up-key-0123456789", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_FORMAT: "json", TMPDIR: dir };
    const child = spawn(process.execPath, [CLI, "system", "up", file, "--env", "local"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.stderr!.setEncoding("utf8").on("data", (s: string) => (out += s));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    return { child, exited, output: () => out };
  }

  it("starts deploy.parallel agents at a time; the next when one of them listens", async () => {
    const held = heldAgents(["a", "b", "c"], 2, await freePort(3), (n) => (n === "c" ? "go" : "wait"));
    const run = up(held.file, held.dir);
    try {
      // Two start at once...
      await waitFor(() => held.starts().length === 2, 20_000, run.output);
      expect(held.starts().sort()).toEqual(["a", "b"]);
      // ...and the third waits while both are starting.
      await new Promise((r) => setTimeout(r, 1500));
      expect(held.starts()).toEqual(expect.not.arrayContaining(["c"]));
      // a listens: c starts though b is still starting.
      held.release("a");
      await waitFor(() => held.starts().includes("c"), 20_000, run.output);
      held.release("b");
      await waitFor(() => /Ctrl-C stops them all/.test(run.output()), 20_000, run.output);
      expect(run.output()).toContain("starting 3 agents, 2 at a time (deploy.parallel)\n");
      expect(held.starts()).toEqual(expect.arrayContaining(["a", "b", "c"]));
    } finally {
      held.release("a");
      held.release("b");
      run.child.kill("SIGTERM");
    }
    expect(await run.exited, run.output()).toBe(0);
  }, 60_000);

  it("starts no agent after one fails to start; the ones up are stopped (exit 3)", async () => {
    const held = heldAgents(["a", "b"], 1, await freePort(2), (n) => (n === "a" ? "fail" : "go"));
    const run = up(held.file, held.dir);
    expect(await run.exited, run.output()).toBe(3);
    expect(run.output()).toContain("agentcli: agent a did not start (exit 3); stopping the others");
    // b was never started: its tools module never loaded.
    expect(held.starts()).toEqual(["a"]);
  }, 60_000);

  it("shares the environment's database.max_connections out as each agent's pool; too small a budget starts nothing (exit 3)", async () => {
    const names = ["a", "b", "c"];
    const base = await freePort(3);
    const { dir, file } = workspace(names, `version: 1\nagents:\n${names.map((n) => `  ${n}: {project: ${n}}\n`).join("")}environments:\n  local: {port_base: ${base}}\ndatabase:\n  max_connections: {local: 10}\n`);
    const log = join(dir, "pools.log");
    writeFileSync(log, "");
    const dist = pathToFileURL(resolve("dist/index.js")).href;
    // b asks for less than its share; c's minimum is above it.
    const own: Record<string, string> = { a: "", b: "DB_POOL_MAX_SIZE=2\n", c: "DB_POOL_MIN_SIZE=5\n" };
    for (const name of names) {
      writeFileSync(join(dir, name, ".env"), `TOOLS_MODULE=./tools.mjs\n${own[name]}`);
      writeFileSync(
        join(dir, name, "tools.mjs"),
        `import { appendFileSync } from "node:fs";
import { defineTool } from ${JSON.stringify(dist)};
appendFileSync(${JSON.stringify(log)}, ${JSON.stringify(name)} + " max=" + process.env.DB_POOL_MAX_SIZE + " min=" + process.env.DB_POOL_MIN_SIZE + "\\n");
export default [defineTool({ name: "noop", description: "does nothing", parameters: { type: "object", properties: {} }, calls: [], run: async () => "ok" })];
`,
      );
    }
    const run = up(file, dir);
    try {
      await waitFor(() => /Ctrl-C stops them all/.test(run.output()), 30_000);
      // floor(10 / 3) = 3 each; b keeps its 2; c's minimum comes down to its maximum.
      expect(readFileSync(log, "utf8").split("\n").filter(Boolean).sort()).toEqual(["a max=3 min=undefined", "b max=2 min=undefined", "c max=3 min=3"]);
    } finally {
      run.child.kill("SIGTERM");
    }
    expect(await run.exited, run.output()).toBe(0);

    writeFileSync(file, readFileSync(file, "utf8").replace("{local: 10}", "{local: 2}"));
    const small = up(file, dir);
    expect(await small.exited, small.output()).toBe(3);
    expect(small.output()).toContain("agentcli: database.max_connections.local: 2 connections cannot serve 3 agents (at least one each)");
  }, 60_000);

  it("an environment without port_base, or an unknown one, is a configuration problem (exit 3)", async () => {
    const { file } = workspace(["a"], "version: 1\nagents:\n  a: {project: a}\nenvironments:\n  prod:\n");
    const cluster = await cli(["system", "up", file, "--env", "prod"]);
    expect(cluster.code).toBe(3);
    expect(cluster.stderr).toContain("environment prod has no port_base: system up starts local processes only");
    const unknown = await cli(["system", "up", file, "--env", "qa"]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain('--env: unknown environment "qa"');
  });

  it("a project policy that already names the callee's API is a problem before anything starts (exit 3)", async () => {
    const { dir, file } = workspace(["a", "b"], "version: 1\nagents:\n  a: {project: a, calls: [b]}\n  b: {project: b}\nenvironments:\n  local: {port_base: 20000}\n");
    writeFileSync(join(dir, "a", "api-policy.yaml"), "apis:\n  b:\n    base_url_env: B_URL\n    auth: none\n    allowed_methods: [GET]\n");
    const r = await cli(["system", "up", file, "--env", "local"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/agents\.a policy .*api-policy\.yaml apis\.b: the system file's edge to agent b needs this API name/);
  });
});

describe("agentcli policy explain", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentcli-explain-"));
  const policy = join(dir, "api-policy.yaml");
  writeFileSync(
    policy,
    `apis:
  shop:
    base_url_env: SHOP_URL
    auth: none
    allowed_methods: [GET, POST]
    denied_operations:
      - {path: /admin}
    approval:
      required_for: {methods: [POST]}
      approvers: [requester]
      timeout_s: 120
`,
  );
  const explain = (args: string[]) => cli(["policy", "explain", ...args, "--policy", policy]);

  it("an allowed call: the steps, exit 0", async () => {
    const r = await explain(["shop", "GET", "/orders?limit=5"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        "GET /orders on API shop",
        "  allowed_methods: passes - GET is in [GET, POST]",
        "  denied_operations: passes - none of 1 covers the call",
        "  allowed_operations: skipped - absent: every call the methods allow",
        "  approval: passes - no rule covers the call: sent without asking",
        "allowed: sent without asking",
        "",
      ].join("\n"),
    );
  });

  it("a gated call names its rule, exit 0; --json gives the explanation", async () => {
    const r = await explain(["shop", "POST", "/orders", "--body", '{"item":1}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("  approval[0]: gates - required_for methods [POST]: approvers requester, decide_with direct, timeout 120 s\n");
    expect(r.stdout).toContain("gated by approval[0]: held until requester approves; expires after 120 s\n");
    const json = JSON.parse((await explain(["shop", "POST", "/orders", "--json"])).stdout);
    expect(json).toMatchObject({ verdict: "gated", gate: { rule: "approval[0]", approvers: ["requester"] } });
  });

  it("a refused call: the entry that refuses it, exit 1", async () => {
    const denied = await explain(["shop", "GET", "/Admin"]);
    expect(denied.code).toBe(1);
    expect(denied.stdout).toContain("  denied_operations[0]: refuses - {path: /admin} covers the call; denials always win\n");
    expect(denied.stdout).toContain("refused: the call is denied by denied_operations of API shop; nothing was sent\n");
    const method = await explain(["shop", "DELETE", "/orders/1"]);
    expect(method.code).toBe(1);
    expect(method.stdout).toContain("refused: method DELETE is not in allowed_methods of API shop");
    expect((await explain(["nope", "GET", "/"])).code).toBe(1);
  });

  it("a broken or missing policy is a configuration problem (exit 3); a body that is not JSON is usage (exit 2)", async () => {
    const broken = join(dir, "broken.yaml");
    writeFileSync(broken, "apis:\n  shop:\n    base_url_env: SHOP_URL\n    auth: sometimes\n    allowed_methods: [GET]\n");
    const r = await cli(["policy", "explain", "shop", "GET", "/", "--policy", broken]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("apis.shop.auth: must be none, bearer, forward or exchange\n");
    const missing = await cli(["policy", "explain", "shop", "GET", "/"], {}, { cwd: dir.replace(/\/[^/]+$/, "") });
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("api-policy.yaml: there is no such file");
    const directory = await cli(["policy", "explain", "shop", "GET", "/", "--policy", dir]);
    expect(directory.code).toBe(3);
    expect(directory.stderr).toContain(`${dir}: cannot be read (EISDIR)\n`);
    expect((await explain(["shop", "POST", "/orders", "--body", "{nope"])).code).toBe(2);
  });
});
