/**
 * The system file (spec 2.9) through its one loader: a valid three-agent file with its defaults,
 * one test per "unusable when" condition (each problem named by its place), every problem of a
 * file at once, the other rules of each key, the call graph, the generated a2a policy entries
 * (loaded by the policy loader, offering the peer tools the edge's calls name), and the editors'
 * JSON Schema (committed file up to date, agreeing with the loader on what it can say).
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { nodeSystemHost } from "../../src/cli/system-host.js";
import { describePeers } from "../../src/a2a/peers/peer.js";
import { loadPolicy } from "../../src/policy/document.js";
import { systemJsonSchemaText } from "../../src/tooling/system-json-schema.js";
import { graphMermaid, graphText } from "../../src/tooling/system/graph.js";
import { loadSystem } from "../../src/tooling/system/load.js";
import { edgeApis, mergePolicy } from "../../src/tooling/system/policy-entries.js";
import type { System } from "../../src/tooling/system/types.js";

/** A directory with the given project folders (and files), and a system file written in it. */
function fixture(projects: readonly string[], files: Record<string, string> = {}): { dir: string; load: (yaml: string, environment?: string) => ReturnType<typeof loadSystem> } {
  const dir = mkdtempSync(join(tmpdir(), "system-file-"));
  for (const p of projects) mkdirSync(join(dir, p), { recursive: true });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return {
    dir,
    load(yaml, environment) {
      const file = join(dir, "system.yaml");
      writeFileSync(file, yaml);
      return loadSystem(yaml, nodeSystemHost(file), { source: file, ...(environment ? { environment } : {}) });
    },
  };
}

const THREE = `
version: 1
name: shop
agents:
  front:
    project: agents/front
    calls:
      - billing
      - agent: catalog
        approvals: deny
        calls: [ask, status, cancel]
        description: Knows the products
  billing:
    project: agents/billing
    client_id: billing-agent
    calls: [catalog]
  catalog:
    project: agents/catalog
    actor_id: catalog-actor
environments:
  local: {port_base: 8100}
  staging: {url: "https://{agent}.{env}.shop.example"}
  prod:
database:
  max_connections: {staging: 5, prod: 20}
deploy: {parallel: 2}
`;
const PROJECTS = ["agents/front", "agents/billing", "agents/catalog"];

async function problemsOf(result: Awaited<ReturnType<typeof loadSystem>>) {
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.problems.map((p) => `${p.place}: ${p.message}`);
}

async function ok(result: Awaited<ReturnType<typeof loadSystem>>): Promise<System> {
  if (!result.ok) throw new Error(result.problems.map((p) => `${p.place}: ${p.message}`).join("\n"));
  return result.system;
}

describe("a valid three-agent file", () => {
  it("loads with its defaults: client and actor ids, edges, environments", async () => {
    const f = fixture(PROJECTS);
    const system = await ok(await f.load(THREE, "local"));
    expect(system.name).toBe("shop");
    expect(system.parallel).toBe(2);
    expect(system.agents.map((a) => [a.name, a.index, a.clientId, a.actorId, a.authPolicy])).toEqual([
      ["front", 0, "front", "front", "shared-bearer"],
      ["billing", 1, "billing-agent", "billing-agent", "shared-bearer"],
      ["catalog", 2, "catalog", "catalog-actor", "shared-bearer"],
    ]);
    expect(system.agents[0]!.dir).toBe(resolve(f.dir, "agents/front"));
    const [toBilling, toCatalog] = system.agents[0]!.calls;
    expect(toBilling).toMatchObject({ agent: "billing", approvals: "relay", auth: "bearer", authWritten: false, calls: ["ask", "status"], place: "agents.front.calls[0]" });
    expect(toCatalog).toMatchObject({ agent: "catalog", approvals: "deny", calls: ["ask", "status", "cancel"], description: "Knows the products" });
    expect([...system.environments.values()]).toEqual([
      { name: "local", kind: "local", portBase: 8100 },
      { name: "staging", kind: "url", url: "https://{agent}.{env}.shop.example" },
      { name: "prod", kind: "cluster" },
    ]);
    expect(system.maxConnections).toEqual({ staging: 5, prod: 20 });
  });

  it("draws the call graph as text and as Mermaid", async () => {
    const system = await ok(await fixture(PROJECTS).load(THREE));
    expect(graphText(system)).toBe(
      [
        "system shop: 3 agents",
        "  front   -> billing   [ask, status; approvals relay; auth bearer]",
        "  front   -> catalog   [ask, status, cancel; approvals deny; auth bearer]",
        "  billing -> catalog   [ask, status; approvals relay; auth bearer]",
        "  catalog    (calls no agent)",
        "entry points (called by no agent): front",
        "",
      ].join("\n"),
    );
    expect(graphMermaid(system)).toBe(
      [
        "flowchart LR",
        '  front["front"]',
        '  billing["billing"]',
        '  catalog["catalog"]',
        '  front -->|"ask, status; approvals relay; auth bearer"| billing',
        '  front -->|"ask, status, cancel; approvals deny; auth bearer"| catalog',
        '  billing -->|"ask, status; approvals relay; auth bearer"| catalog',
        "",
      ].join("\n"),
    );
  });

  it("generates the a2a policy entries each caller needs: auth, approvals relay or deny, calls as methods", async () => {
    const system = await ok(await fixture(PROJECTS).load(THREE));
    const front = system.agents[0]!;
    const apis = edgeApis(system, front);
    expect(apis.billing).toMatchObject({
      protocol: "a2a",
      a2a: { path: "/a2a/billing" },
      base_url_env: "AGENT_BILLING_URL",
      auth: "bearer",
      token_env: "AGENT_BILLING_TOKEN",
      approval: [{ required_for: { operations: [{ a2a_operation: "approve" }] }, approvers: ["requester"] }],
    });
    expect(apis.catalog).toMatchObject({ description: "Knows the products", denied_operations: [{ a2a_operation: "approve" }, { a2a_operation: "reject" }] });
    const merged = mergePolicy(undefined, "api-policy.yaml", apis, "generated");
    expect(merged.ok).toBe(true);
    const policy = loadPolicy((merged as { text: string }).text);
    const peers = describePeers(policy, new Map([["billing", "http://127.0.0.1:8101"], ["catalog", "http://127.0.0.1:8102"]]));
    const billing = peers.find((p) => p.name === "billing")!.allows;
    const catalog = peers.find((p) => p.name === "catalog")!.allows;
    // relay: approve messages wait for the person here, rejects go through; no CancelTask (calls [ask, status]).
    expect(billing).toMatchObject({ card: "free", SendMessage: "free", GetTask: "free", CancelTask: "refused", approve: { SendMessage: "gated" }, reject: { SendMessage: "free" } });
    // deny: no decision is ever sent from here; cancel is allowed.
    expect(catalog).toMatchObject({ SendMessage: "free", CancelTask: "free", approve: { SendMessage: "refused" }, reject: { SendMessage: "refused" } });
  });

  it("merges the generated entries into the project's own policy; a name both use is a problem", async () => {
    const system = await ok(await fixture(PROJECTS).load(THREE));
    const own = "apis:\n  weather:\n    base_url_env: WEATHER_URL\n    auth: none\n    allowed_methods: [GET]\n";
    const merged = mergePolicy(own, "api-policy.yaml", edgeApis(system, system.agents[0]!), "generated");
    expect(merged).toMatchObject({ ok: true, apis: ["weather", "billing", "catalog"] });
    const clash = mergePolicy("apis:\n  billing:\n    base_url_env: X\n    auth: none\n    allowed_methods: [GET]\n", "api-policy.yaml", edgeApis(system, system.agents[0]!), "generated");
    expect(clash).toEqual({ ok: false, problems: [{ place: "api-policy.yaml apis.billing", message: expect.stringContaining("edge to agent billing needs this API name") }] });
  });

  it("edges default their auth by the caller's auth policy (the project's .env): jwt exchange, custom forward", async () => {
    const f = fixture(PROJECTS, { "agents/front/.env": "AUTH_POLICY=jwt\n", "agents/billing/.env": "AUTH_POLICY=custom\n" });
    const system = await ok(await f.load(`${THREE}identity:\n  issuer: https://issuer.example\n  token_url: {staging: "https://issuer.example/token"}\n`));
    expect(system.agents[0]!.calls.map((e) => e.auth)).toEqual(["exchange", "exchange"]);
    expect(system.agents[1]!.calls.map((e) => e.auth)).toEqual(["forward"]);
    const apis = edgeApis(system, system.agents[0]!);
    expect(apis.billing).toMatchObject({ auth: "exchange", exchange: { audience: "billing-agent", allow_actorless: false } });
    expect(loadPolicy((mergePolicy(undefined, "p", apis, "g") as { text: string }).text).apis.get("billing")?.exchange?.audience).toBe("billing-agent");
  });
});

describe("the file is unusable when", () => {
  it("a project directory is missing", async () => {
    expect(await problemsOf(await fixture(["agents/front", "agents/billing"]).load(THREE))).toEqual([
      "agents.catalog.project: there is no directory agents/catalog (relative to the system file)",
    ]);
  });

  it("a project directory is named by two agents (also through another spelling or a link)", async () => {
    const f = fixture(PROJECTS);
    symlinkSync(join(f.dir, "agents/front"), join(f.dir, "link"));
    const yaml = "version: 1\nagents:\n  a: {project: agents/front}\n  b: {project: ./agents/../agents/front/}\n  c: {project: link}\n";
    expect(await problemsOf(await f.load(yaml))).toEqual([
      "agents.b.project: names the same directory as agents.a.project",
      "agents.c.project: names the same directory as agents.a.project",
    ]);
  });

  it("an edge names an unknown agent", async () => {
    const yaml = THREE.replace("calls: [catalog]", "calls: [catalog, ledger]");
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual(["agents.billing.calls[1]: unknown agent ledger"]);
    const mapping = THREE.replace("calls: [catalog]", "calls: [catalog, {agent: ledger}]");
    expect(await problemsOf(await fixture(PROJECTS).load(mapping))).toEqual(["agents.billing.calls[1].agent: unknown agent ledger"]);
  });

  it("an edge names the agent itself", async () => {
    const yaml = THREE.replace("calls: [catalog]", "calls: [catalog, {agent: billing}]");
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual(["agents.billing.calls[1].agent: is the agent itself; an agent does not call itself"]);
  });

  it("one agent calls another twice", async () => {
    const yaml = THREE.replace("calls: [catalog]", "calls: [catalog, {agent: catalog, approvals: deny}]");
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual(["agents.billing.calls[1].agent: calls catalog a second time (also at calls[0])"]);
  });

  it("two agents share a client id (a default one counts)", async () => {
    const yaml = THREE.replace("client_id: billing-agent", "client_id: front");
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual([
      'agents.billing.client_id: "front" is also the client id of agent front',
      'agents.billing.actor_id: "front" (the default) is also the actor id of agent front',
    ]);
  });

  it("two agents share an actor id", async () => {
    const yaml = THREE.replace("actor_id: catalog-actor", "actor_id: billing-agent");
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual(['agents.catalog.actor_id: "billing-agent" is also the actor id of agent billing']);
  });

  it("an exchange edge lacks identity (written, or the default under a jwt caller)", async () => {
    const written = THREE.replace("calls: [catalog]", "calls: [{agent: catalog, auth: exchange, scope: read}]");
    expect(await problemsOf(await fixture(PROJECTS).load(written))).toEqual(["agents.billing.calls[0].auth: exchange needs identity (the token issuer) at the top level"]);
    const byDefault = fixture(PROJECTS, { "agents/billing/.env": "# billing runs under jwt\nAUTH_POLICY=jwt\n" });
    expect(await problemsOf(await byDefault.load(THREE))).toEqual([
      "agents.billing.calls[0].auth: is exchange (the default under agent billing's jwt auth policy), which needs identity (the token issuer) at the top level",
    ]);
  });

  it("an environment is unknown (the one asked for)", async () => {
    expect(await problemsOf(await fixture(PROJECTS).load(THREE, "qa"))).toEqual(['--env: unknown environment "qa"']);
  });

  it("a token_url key is unknown", async () => {
    const yaml = `${THREE}identity:\n  issuer: https://issuer.example\n  token_url:\n    staging: https://issuer.example/token\n    qa: https://qa.issuer.example/token\n`;
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual(["identity.token_url.qa: unknown environment"]);
  });

  it("a max_connections key is unknown", async () => {
    const yaml = THREE.replace("max_connections: {staging: 5, prod: 20}", "max_connections: {staging: 5, dev: 2}");
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual(["database.max_connections.dev: unknown environment"]);
  });
});

describe("every problem at once, each with its place", () => {
  it("reports the problems of every part of a file together", async () => {
    const yaml = `
version: 2
name: -bad
colour: blue
agents:
  Front: {project: agents/front}
  front:
    project: nowhere
    calls: [ghost, {agent: billing, calls: [status, status], approvals: maybe}]
  billing:
    project: agents/billing
    client_id: "has space"
    calls: [{agent: front, auth: bearer, allow_actorless: true, scope: x}]
environments:
  Local: {port_base: 8000}
  both: {port_base: 9000, url: "http://{agent}"}
  nohole: {url: "https://fixed.example"}
  odd: {url: "https://{agent}.{zone}.example"}
  high: {port_base: 65000}
  low: {port_base: 80}
deploy: {parallel: 17}
`;
    // Agents whose own keys are wrong are not checked against the others; everything else is.
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual([
      "document: has unknown key colour",
      "version: must be 1",
      "name: must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit",
      "deploy.parallel: must be at most 16",
      "environments.Local: environment names must be 1-31 lowercase letters, digits or -, starting with a letter",
      "agents.Front: agent names must be 1-26 lowercase letters, digits or _, starting with a letter",
      "agents.front.calls[1].approvals: must be relay or deny",
      "agents.billing.client_id: must have no whitespace, commas or control characters",
      "environments.low.port_base: must be at least 1024",
      "environments.both: port_base and url are mutually exclusive",
      "environments.nohole.url: must contain {agent} or {project}",
      "environments.odd.url: has an unknown placeholder {zone} (use {agent}, {project}, {env})",
    ]);
  });

  it("then the rules between agents, keys and environments", async () => {
    const yaml = `
version: 1
agents:
  front:
    project: nowhere
    calls: [ghost, {agent: billing, calls: [status, status]}]
  billing:
    project: agents/billing
    calls: [{agent: front, auth: bearer, allow_actorless: true, scope: x}]
environments:
  both: {port_base: 9000, url: "http://{agent}"}
  nohole: {url: "https://fixed.example"}
  odd: {url: "https://{agent}.{zone}.example"}
  local: {port_base: 8100}
`;
    expect(await problemsOf(await fixture(PROJECTS).load(yaml))).toEqual([
      "agents.front.project: there is no directory nowhere (relative to the system file)",
      "agents.front.calls[0]: unknown agent ghost",
      "agents.front.calls[1].calls: must include ask",
      "agents.front.calls[1].calls: names a call twice",
      "agents.billing.calls[0].scope: is only valid with auth exchange",
      "agents.billing.calls[0].allow_actorless: is only valid with auth exchange",
      "environments.both: port_base and url are mutually exclusive",
      "environments.nohole.url: must contain {agent} or {project}",
      "environments.odd.url: has an unknown placeholder {zone} (use {agent}, {project}, {env})",
    ]);
  });

  it("refuses repeated keys, YAML that does not parse, and a file without agents", async () => {
    const f = fixture(PROJECTS);
    expect(await problemsOf(await f.load("version: 1\nagents:\n  a: {project: agents/front}\n  a: {project: agents/billing}\n"))).toEqual([
      "agents.a: repeats a key (line 4)",
    ]);
    expect((await problemsOf(await f.load("version: 1\nagents: [\n")))[0]).toMatch(/system\.yaml line \d+: is not valid YAML/);
    expect(await problemsOf(await f.load("version: 1\n"))).toEqual(["agents: is required"]);
    expect(await problemsOf(await f.load("agents: {a: {project: agents/front}}\n"))).toEqual(["version: is required (version: 1)"]);
    expect(await problemsOf(await f.load("version: 1\nagents: {}\n"))).toEqual(["agents: must name at least one agent"]);
    expect(await problemsOf(await f.load("- a\n"))).toEqual(["document: must be a mapping"]);
  });
});

describe("schemas/system.schema.json", () => {
  const text = readFileSync(resolve("schemas/system.schema.json"), "utf8");
  const ajv = new Ajv2020({ allErrors: true, strictTypes: false });
  const validate = ajv.compile(JSON.parse(text));

  it("is what npm run schemas writes from the zod schema", () => {
    expect(text).toBe(systemJsonSchemaText());
  });

  it("accepts the valid file and refuses what the loader refuses by shape", () => {
    expect(validate(parse(THREE)), JSON.stringify(validate.errors)).toBe(true);
    for (const bad of [
      THREE.replace("version: 1", "version: 2"),
      THREE.replace("name: shop", "name: -shop"),
      THREE.replace("  front:\n    project", "  Front:\n    project"),
      THREE.replace("approvals: deny", "approvals: maybe"),
      THREE.replace("calls: [ask, status, cancel]", "calls: [status]"),
      THREE.replace("local: {port_base: 8100}", "local: {port_base: 80}"),
      THREE.replace("deploy: {parallel: 2}", "deploy: {parallel: 2, extra: 1}"),
      THREE.replace('url: "https://{agent}.{env}.shop.example"', 'url: "https://fixed.example"'),
    ])
      expect(validate(parse(bad)), bad).toBe(false);
  });
});
