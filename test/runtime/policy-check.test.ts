/**
 * scripts/policy-check.mjs (`npm run policy:check`) as a child process on the built package:
 * the example policies pass, a broken policy and a tools module whose declared call the policy
 * refuses exit 3 with their places, usage errors exit 2.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const exec = promisify(execFile);
const SCRIPT = resolve("scripts/policy-check.mjs");
const POLICY = resolve("policy");
const DIST = pathToFileURL(resolve("dist/index.js")).href;

/** The env vars each example policy names (see the comments at the top of each file). */
const EXAMPLE_ENV: Record<string, Record<string, string>> = {
  "read-only-rest.yaml": { CATALOG_API_URL: "https://catalog.example.com/v2", CATALOG_API_TOKEN: "catalog-token" },
  "gated-writes.yaml": { TICKETS_API_URL: "https://tickets.example.com/api", TICKETS_API_TOKEN: "tickets-token" },
  "jsonrpc.yaml": { LEDGER_RPC_URL: "https://ledger.internal.example", LEDGER_RPC_TOKEN: "ledger-token" },
  "a2a-peer.yaml": { PLANNER_AGENT_URL: "https://planner.agents.example", PLANNER_AGENT_TOKEN: "planner-token" },
};

/** A working directory of its own, so no stray .env or api-policy.yaml is read. */
const tempDir = () => mkdtempSync(join(tmpdir(), "policy-check-"));

async function run(args: string[], env: Record<string, string> = {}, cwd = tempDir()) {
  try {
    // As package.json runs it: `--` first, so node never reads a script argument --env-file.
    const r = await exec(process.execPath, [SCRIPT, "--", ...args], { env: { PATH: process.env.PATH ?? "", ...env }, cwd });
    return { code: 0, stdout: r.stdout, stderr: r.stderr, out: r.stdout + r.stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr, out: e.stdout + e.stderr };
  }
}

function expectCode(res: { code: number; out: string }, code: number) {
  expect(res.code, res.out).toBe(code);
}

describe("policy:check", () => {
  it.each(Object.keys(EXAMPLE_ENV))("passes policy/%s with its env vars set", async (file) => {
    const res = await run(["--policy", join(POLICY, file)], EXAMPLE_ENV[file]);
    expect(res.stderr).toBe("");
    expect(res.code, res.out).toBe(0);
    expect(res.stdout).toBe("ok: 1 APIs checked\n");
  });

  it("lists the tools it would make from the OpenAPI files with --openapi-tools or TOOLS_FROM_OPENAPI", async () => {
    // From the project root (the example names its OpenAPI file relative to it), with an empty
    // env file so no .env there is read.
    const root = resolve(".");
    const env = { ORDERS_API_URL: "http://127.0.0.1:8081", ENV_FILE: join(tempDir(), "none.env") };
    const listing = [
      "tool orders_list_orders: GET /orders (listOrders)",
      "tool orders_create_order: POST /orders (createOrder), waits for approval",
      "tool orders_get_order: GET /orders/{order_id} (getOrder)",
      "ok: 1 APIs checked",
      "",
    ].join("\n");
    const byFlag = await run(["--policy", "policy/orders-openapi.yaml", "--openapi-tools"], env, root);
    expect(byFlag.stderr).toBe("");
    expect(byFlag.stdout).toBe(listing);
    const bySetting = await run(["--policy", "policy/orders-openapi.yaml"], { ...env, TOOLS_FROM_OPENAPI: "true" }, root);
    expect(bySetting.stdout).toBe(listing);
    const neither = await run(["--policy", "policy/orders-openapi.yaml"], env, root);
    expect(neither.stdout).toBe("ok: 1 APIs checked\n");
  });

  it("exits 3 when a made tool has the name of a checked tool, naming both", async () => {
    const dir = tempDir();
    const tools = join(dir, "tools.mjs");
    writeFileSync(tools, `import { defineTool } from ${JSON.stringify(DIST)};\nexport default [defineTool({ name: "orders_get_order", description: "mine", parameters: { type: "object" }, calls: [], run: () => "x" })];\n`);
    const res = await run(["--policy", "policy/orders-openapi.yaml", "--openapi-tools", "--tools", tools], { ORDERS_API_URL: "http://127.0.0.1:8081", ENV_FILE: join(dir, "none.env") }, resolve("."));
    expectCode(res, 3);
    expect(res.stderr).toContain("tools.orders_get_order: Two tools are named orders_get_order: the OpenAPI operation GET /orders/{order_id} (getOrder) of API orders, and the agent's tool orders_get_order");
  });

  it("reads the policy path from API_POLICY_PATH and the env vars from --env-file", async () => {
    const dir = tempDir();
    const envFile = join(dir, "policy.env");
    writeFileSync(envFile, "# example\nexport CATALOG_API_URL=https://catalog.example.com\nCATALOG_API_TOKEN='tok # not a comment'\n");
    const res = await run(["--env-file", envFile], { API_POLICY_PATH: join(POLICY, "read-only-rest.yaml") }, dir);
    expect(res.code, res.out).toBe(0);
    expect(res.stdout).toContain("ok: 1 APIs checked");
  });

  it("reads .env in the working directory below the process environment", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, ".env"), "CATALOG_API_URL=not a url\nCATALOG_API_TOKEN=tok\n");
    const policy = join(POLICY, "read-only-rest.yaml");
    expectCode(await run(["--policy", policy], {}, dir), 3);
    expectCode(await run(["--policy", policy], { CATALOG_API_URL: "https://catalog.example.com" }, dir), 0);
  });

  it("exits 3 and names the env var an example needs when it is not set", async () => {
    const res = await run(["--policy", join(POLICY, "gated-writes.yaml")], { TICKETS_API_URL: "https://tickets.example.com" });
    expect(res.code, res.out).toBe(3);
    expect(res.out).toContain("apis.tickets.token_env: names TICKETS_API_TOKEN, which is not set");
  });

  it("exits 3 on a broken policy and prints each problem as place: message", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "api-policy.yaml"),
      [
        "apis:",
        "  orders:",
        "    base_url_env: ORDERS_URL",
        "    auth: bearer",
        "    allowed_methods: [GET, POST]",
        "    allowed_operations:",
        "      - {path: /orders/../admin}",
        "  peer:",
        "    protocol: a2a",
        "    a2a: {path: /a2a}",
        "    base_url_env: PEER_URL",
        "    auth: forward",
        "    allowed_methods: [POST]",
        "    approval:",
        "      required_for: {methods: [POST]}",
        "      approvers: [requester]",
        "      decide_with: step_up",
        "",
      ].join("\n"),
    );
    const res = await run([], { ORDERS_URL: "https://orders.example" }, dir);
    expect(res.code, res.out).toBe(3);
    expect(res.stdout).toBe("");
    expect(res.stderr).toContain("apis.orders.token_env: is required with auth bearer\n");
    expect(res.stderr).toContain("apis.orders.allowed_operations[0].path: must not contain . or .. segments\n");
    expect(res.stderr).toContain("apis.peer.approval.decide_with: step_up is reserved");
    expect(res.stderr).toMatch(/^apis\.[a-z_.[\]0-9]+: .+$/m);
  });

  it("exits 3 when the file named by --policy does not exist", async () => {
    const res = await run(["--policy", "missing-policy.yaml"]);
    expect(res.code, res.out).toBe(3);
    expect(res.out).toContain("API_POLICY_PATH: names a file that does not exist");
  });

  it("exits 3 naming the place, not crashing, when the policy or an OpenAPI file it names is a directory", async () => {
    const dir = tempDir();
    const policy = await run(["--policy", dir]);
    expect(policy.code, policy.out).toBe(3);
    expect(policy.out).toContain("API_POLICY_PATH: names a file that cannot be read (EISDIR)");
    writeFileSync(
      join(dir, "api-policy.yaml"),
      ["apis:", "  orders:", "    base_url_env: ORDERS_URL", "    auth: none", "    allowed_methods: [GET]", `    openapi: ${JSON.stringify(dir)}`, ""].join("\n"),
    );
    const openapi = await run(["--policy", join(dir, "api-policy.yaml")], { ORDERS_URL: "https://orders.example" }, dir);
    expect(openapi.code, openapi.out).toBe(3);
    expect(openapi.stderr).toContain("apis.orders.openapi: names a file that cannot be read (EISDIR)\n");
  });

  it("exits 3 naming tools.<name>.calls[i] when a tool declares a call the policy refuses", async () => {
    const dir = tempDir();
    const tools = join(dir, "tools.mjs");
    writeFileSync(
      tools,
      [
        `import { defineTool } from ${JSON.stringify(DIST)};`,
        "const params = { type: 'object', properties: {}, additionalProperties: false };",
        "export const tools = [",
        "  defineTool({ name: 'find_products', description: 'Finds products.', parameters: params,",
        "    calls: [{ api: 'catalog', method: 'GET', operation_id: 'listProducts', path: '/products' }], run: () => 'ok' }),",
        "  defineTool({ name: 'delete_product', description: 'Deletes a product.', parameters: params,",
        "    calls: [{ api: 'catalog', method: 'DELETE', path: '/products/{product_id}' }], run: () => 'ok' }),",
        "];",
        "",
      ].join("\n"),
    );
    const res = await run(["--policy", join(POLICY, "read-only-rest.yaml"), "--tools", tools], EXAMPLE_ENV["read-only-rest.yaml"], dir);
    expect(res.code, res.out).toBe(3);
    expect(res.stderr).toContain("tools.delete_product.calls[0]: is refused by the policy: method DELETE is not in allowed_methods");
    expect(res.stderr).not.toContain("tools.find_products");
  });

  it("passes a tools module (default export) whose declared calls the policy allows", async () => {
    const dir = tempDir();
    const tools = join(dir, "tools.mjs");
    writeFileSync(
      tools,
      [
        `import { defineTool } from ${JSON.stringify(DIST)};`,
        "export default [defineTool({ name: 'balance', description: 'Reads a balance.',",
        "  parameters: { type: 'object' },",
        "  calls: [{ api: 'ledger', method: 'POST', path: '/rpc', rpc_method: 'ledger.getBalance' }], run: () => 'ok' })];",
        "",
      ].join("\n"),
    );
    const res = await run(["--policy", join(POLICY, "jsonrpc.yaml"), "--tools", tools], EXAMPLE_ENV["jsonrpc.yaml"], dir);
    expect(res.out).toBe("ok: 1 APIs checked\n");
    expect(res.code, res.out).toBe(0);
  });

  it("says ok with no policy file at the default path (every outbound call refused)", async () => {
    const res = await run([]);
    expect(res.code, res.out).toBe(0);
    expect(res.stdout).toMatch(/^ok: 0 APIs checked/);
  });

  it("exits 2 on usage errors", async () => {
    expectCode(await run(["--nope"]), 2);
    expectCode(await run(["--policy"]), 2);
    expectCode(await run(["--policy", "a.yaml", "--policy", "b.yaml"]), 2);
    expectCode(await run(["--env-file", "/nonexistent/.env"]), 2);
    expectCode(await run(["--tools", "/nonexistent/tools.mjs"]), 2);
    const dir = tempDir();
    writeFileSync(join(dir, "bad-tools.mjs"), "export const something = 1;\n");
    const bad = await run(["--tools", join(dir, "bad-tools.mjs")], {}, dir);
    expectCode(bad, 2);
    expect(bad.stderr).toContain("must export an array of tools");
    const help = await run(["--help"]);
    expectCode(help, 0);
    expect(help.stdout).toContain("--policy PATH");
  });
});
