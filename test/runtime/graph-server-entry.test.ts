/**
 * RUNTIME=graph-server as `npm start` runs it (CONTRACT 7): the built Node entry as a process on
 * 127.0.0.1 serves our routes and the server's native API on HOST/PORT behind the one auth
 * policy (a gated tool from TOOLS_MODULE paused and resumed by our approval route), with the
 * server's local state in GRAPHSERVER_DATA_DIR and never in the working directory. Then an install without the optional `@langchain/*` packages, or without
 * scripts/graph-server/langgraph.json (a copy of dist/ with node_modules linked but those left
 * out), stops startup with a line that says what to install or copy (exit 3).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseSse, waitFor } from "../helpers.js";
import { killSpawnedAfterEach, spawnEntry, startEntry, stopEntry } from "../support/service-process.js";
import { recordingUpstream } from "../support/upstream.js";

killSpawnedAfterEach();
const upstream = recordingUpstream();

const KEY = "graph-entry-key-0123456789";
// LOG_LEVEL stays INFO: the entry's "listening" line is an INFO record outside dev.
const ENV = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", RUNTIME: "graph-server" };
const made: string[] = [];
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

describe("RUNTIME=graph-server with npm start", () => {
  it("serves our routes and the native API on HOST/PORT behind the auth policy; state in GRAPHSERVER_DATA_DIR", async () => {
    const cwd = temp("graph-entry-cwd-");
    const data = temp("graph-entry-data-");
    // The gated tool comes from TOOLS_MODULE, as in any deployment (the example tickets tools).
    const tools = { TOOLS_MODULE: resolve("examples/tools/tickets.mjs"), API_POLICY_PATH: resolve("examples/tools/api-policy.yaml"), TICKETS_API_TOKEN: "t" };
    const svc = await startEntry("node", { ...ENV, ...tools, TICKETS_API_URL: upstream.base, GRAPHSERVER_DATA_DIR: data }, { cwd, ms: 60_000 });
    try {
      const health = await fetch(`${svc.base}/health`);
      expect(await health.json()).toEqual({ status: "ok", runtime: "graph-server", checkpointer: "graph-server", run_store: "memory" });
      const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
      const chat = await fetch(`${svc.base}/chat`, { method: "POST", headers: auth, body: JSON.stringify({ message: "hello" }) });
      expect(chat.status).toBe(200);
      const events = parseSse(await chat.text());
      expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      const threadId = events[0]!.data.thread_id as string;
      expect(threadId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      // The native API, on the same port, behind the same policy.
      const search = await fetch(`${svc.base}/threads/search`, { method: "POST", headers: auth, body: "{}" });
      expect(search.status).toBe(200);
      expect(((await search.json()) as { thread_id: string }[]).map((t) => t.thread_id)).toContain(threadId);
      expect((await fetch(`${svc.base}/threads/search`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(401);
      expect((await fetch(`${svc.base}/threads/${threadId}/state`, { headers: auth })).status).toBe(200);
      // A gated call from TOOLS_MODULE pauses; our approval route resumes it and sends it once.
      const gated = await fetch(`${svc.base}/chat`, { method: "POST", headers: auth, body: JSON.stringify({ message: '/call create_ticket {"title":"printer"}', thread_id: threadId }) });
      const end = parseSse(await gated.text()).at(-1)!.data;
      expect(end.status).toBe("awaiting_approval");
      expect(upstream.hits).toHaveLength(0);
      const decided = await fetch(`${svc.base}/threads/${threadId}/approvals/${end.approval.approval_id as string}`, { method: "POST", headers: auth, body: JSON.stringify({ decision: "approve" }) });
      expect(parseSse(await decided.text()).at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      expect(upstream.hits.map((h) => `${h.method} ${h.url}`)).toEqual(["POST /tickets"]);
    } finally {
      expect(await stopEntry(svc)).toBe(0);
    }
    expect(readdirSync(cwd)).toEqual([]);
    expect(existsSync(join(data, ".langgraph_api"))).toBe(true);
  }, 90_000);
});

describe("RUNTIME=graph-server with npm run dev", () => {
  it("serves with the development defaults: a made-up key, the playground and /docs", async () => {
    const cwd = temp("graph-entry-cwd-");
    const svc = await startEntry([process.execPath, resolve("dist/node.js"), "--dev"], { RUNTIME: "graph-server", GRAPHSERVER_DATA_DIR: temp("graph-entry-data-") }, { cwd, ms: 60_000 });
    try {
      await waitFor(() => /development API key: \S+\n/.test(svc.stdout()));
      const key = /development API key: (\S+)/.exec(svc.stdout())![1]!;
      expect((await fetch(`${svc.base}/playground`)).status).toBe(200);
      expect((await fetch(`${svc.base}/docs`)).status).toBe(200);
      expect(await (await fetch(`${svc.base}/health`)).json()).toMatchObject({ runtime: "graph-server" });
      const chat = await fetch(`${svc.base}/chat`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ message: "hi" }) });
      expect(parseSse(await chat.text()).at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    } finally {
      expect(await stopEntry(svc)).toBe(0);
    }
    expect(readdirSync(cwd)).toEqual([]);
  }, 90_000);
});

/**
 * dist/, package.json and (unless left out) scripts/graph-server copied to a directory of its
 * own, its node_modules a link per package of this repository's but `@langchain` (unless kept).
 */
function install({ langchain, config }: { langchain: boolean; config: boolean }): string {
  const root = temp("graph-entry-install-");
  cpSync(resolve("dist"), join(root, "dist"), { recursive: true });
  cpSync(resolve("package.json"), join(root, "package.json"));
  if (config) cpSync(resolve("scripts/graph-server"), join(root, "scripts/graph-server"), { recursive: true });
  mkdirSync(join(root, "node_modules"));
  for (const name of readdirSync(resolve("node_modules"))) {
    if (name.startsWith(".") || (name === "@langchain" && !langchain)) continue;
    symlinkSync(resolve("node_modules", name), join(root, "node_modules", name));
  }
  return root;
}

describe("what graph-server needs beside dist/", () => {
  const startIn = async (root: string) => {
    const svc = spawnEntry([process.execPath, join(root, "dist", "node.js")], { ...ENV, HOST: "127.0.0.1", PORT: "0", ENV_FILE: "/nonexistent/.env", GRAPHSERVER_DATA_DIR: temp("graph-entry-data-") }, root);
    return { code: await svc.exited, stderr: svc.stderr() };
  };

  it("without the optional @langchain packages: exit 3 naming the package and how to install it", async () => {
    const { code, stderr } = await startIn(install({ langchain: false, config: true }));
    expect(code).toBe(3);
    expect(stderr).toContain("The service cannot start: RUNTIME is graph-server, but its server package @langchain/");
    expect(stderr).toContain("@langchain/langgraph-api@1.5.1");
    expect(stderr).toContain("not with --omit=optional; the container image needs --build-arg GRAPH_SERVER=true");
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
  }, 30_000);

  it("without scripts/graph-server/langgraph.json: exit 3 naming the file", async () => {
    const { code, stderr } = await startIn(install({ langchain: true, config: false }));
    expect(code).toBe(3);
    expect(stderr).toMatch(/^The service cannot start: RUNTIME is graph-server: scripts\/graph-server\/langgraph\.json was not found above .*\(copy scripts\/graph-server\/ beside dist\/\)\n$/);
  }, 30_000);
});
