/**
 * The built Node entry (dist/node.js) as a real process: it serves over HTTP on loopback,
 * drains runs on SIGTERM, refuses invalid settings naming every variable, and starts without a
 * model configured (runs then fail naming the setting). `npm test` builds dist first.
 */
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { answerText, parseSse, readRest, readUntil } from "../helpers.js";
import { expectConnectTimeoutToFailTheCall } from "./connect-timeout.js";
import { startOtlpReceiver } from "../support/otlp-receiver.js";
import { HOST, killSpawnedAfterEach, spawnEntry, startEntry } from "../support/service-process.js";

const KEY = "k";
const LOG_MODULES = fileURLToPath(new URL("./fixtures/log-modules.mjs", import.meta.url));

killSpawnedAfterEach();

const spawnService = (env: Record<string, string>) => spawnEntry("node", env);
const startService = (env: Record<string, string>) => startEntry("node", env);

const FAKE = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_FORMAT: "json" };

/** The user and group ids of `nobody` on Linux. */
const NOBODY = 65534;

/**
 * Whether another user may use `file` (`bit`: 0o004 read, 0o001 run): the file lets others, and
 * every folder above it is searchable.
 */
function openToOthers(file: string, bit: number): boolean {
  if ((statSync(file).mode & bit) === 0) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

function postChat(base: string, message: string): Promise<Response> {
  return fetch(`${base}/chat`, {
    method: "POST",
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ message }),
  });
}

describe("node dist/node.js", () => {
  it("serves a chat over real HTTP", async () => {
    const svc = await startService(FAKE);
    const res = await postChat(svc.base, "hello");
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = parseSse(text);
    expect(events[0]?.event).toBe("message.start");
    expect(answerText(events)).toBe("echo: hello");
    expect(events.at(-1)?.event).toBe("message.end");
    expect(events.at(-1)?.data.status).toBe("ok");
  });

  it("on SIGTERM lets a run in progress finish, then exits 0", async () => {
    const svc = await startService({ ...FAKE, DRAIN_GRACE_S: "10" });
    const res = await postChat(svc.base, "/sleep 1500\nhi");
    expect(res.status).toBe(200);
    const { reader, text: head } = await readUntil(res, (events) => events.some((e) => e.event === "message.start"));
    expect(svc.child.kill("SIGTERM")).toBe(true);

    const text = await readRest(reader, head);
    const events = parseSse(text);
    expect(events[0]?.event).toBe("message.start");
    expect(answerText(events)).toBe("echo: hi");
    const end = events.at(-1)!;
    expect(end.event, text).toBe("message.end");
    expect(end.data.status).toBe("ok");
    expect(await svc.exited).toBe(0);
    expect(svc.stdout()).toMatch(/SIGTERM: draining 1 run/);
  });

  it("refuses to start on invalid settings, naming every bad variable", async () => {
    const svc = spawnService({ ...FAKE, HOST, PORT: "abc", MODEL_TIMEOUT_S: "-1", ENV_FILE: "/nonexistent/.env" });
    const code = await svc.exited;
    expect(code).not.toBe(0);
    expect(typeof code).toBe("number");
    expect(svc.stderr()).toMatch(/\bPORT\b/);
    expect(svc.stderr()).toMatch(/\bMODEL_TIMEOUT_S\b/);
    expect(svc.stdout()).not.toMatch(/listening/);
  });

  it("outside dev every line on stdout is one JSON object, the entry's own lines included", async () => {
    const svc = await startService(FAKE);
    expect((await postChat(svc.base, "hello")).status).toBe(200);
    svc.child.kill("SIGTERM");
    expect(await svc.exited).toBe(0);
    const lines = svc.stdout().split("\n").filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((l) => JSON.parse(l).message)).toEqual(expect.arrayContaining([expect.stringMatching(/^Agent service listening on /), "SIGTERM: draining 0 run(s)"]));
  });

  it("a port in use stops startup with one line naming PORT, no stack", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, HOST, r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const svc = spawnService({ ...FAKE, HOST, PORT: String(port), ENV_FILE: "/nonexistent/.env" });
      expect(await svc.exited).toBe(2);
      const lines = svc.stderr().split("\n").filter((l) => l !== "");
      expect(lines).toEqual([`The service cannot start: PORT ${port} on HOST ${HOST} is in use.`]);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it("a malformed SQLDB_DSN stops startup naming the variable and never prints the password (exit 2)", async () => {
    const svc = spawnService({ ...FAKE, HOST, PORT: "0", CHECKPOINTER: "sql", SQLDB_DSN: "postgres://agent:s3cret-pw@db.example:notaport/app", ENV_FILE: "/nonexistent/.env" });
    expect(await svc.exited).toBe(2);
    expect(svc.stderr()).toMatch(/SQLDB_DSN/);
    expect(svc.stderr() + svc.stdout()).not.toContain("s3cret-pw");
    expect(svc.stderr()).not.toMatch(/\n\s+at /);
  });

  it("loads the dependencies every start needs from its own chunks, not as modules from node_modules", async () => {
    // tsup.config.ts bundles them (about 230 modules, 9 MB of RSS at start on Node 24); yaml,
    // whose Node build is CommonJS, is left as a module and shows that the log works.
    const log = join(mkdtempSync(join(tmpdir(), "modules-")), "loaded.txt");
    writeFileSync(log, "");
    const svc = await startService({ ...FAKE, NODE_OPTIONS: `--import ${LOG_MODULES}`, MODULES_LOG: log });
    const res = await postChat(svc.base, "hello");
    expect(res.status).toBe(200);
    await res.text();
    const packages = new Set(readFileSync(log, "utf8").split("\n").filter(Boolean).map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]));
    expect(packages).toContain("yaml");
    for (const bundled of ["zod", "hono", "@hono/node-server", "jose", "@opentelemetry/api", "@cfworker/json-schema", "eventsource-parser"]) expect(packages).not.toContain(bundled);
  });

  it("starts with no model configured; a run then fails naming MODEL_NAME", async () => {
    // `npm start` with nothing but the key: MODEL_PROVIDER defaults to openai, no MODEL_NAME.
    const svc = await startService({ API_KEY: KEY });
    const res = await postChat(svc.base, "hello");
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const events = parseSse(text);
    const last = events.at(-1)!;
    expect(last.event, text).toBe("error");
    expect(last.data.code).toBe("run_failed");
    expect(last.data.message).toContain("MODEL_NAME");
  });
});

describe("TOOLS_MODULE", () => {
  it("serves the example tools module: a gated call waits for approval and is sent once when approved", async () => {
    const hits: { method: string; url: string; auth: string | undefined; body: string }[] = [];
    const upstream = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        hits.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ id: "T-1" }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, HOST, r));
    try {
      const svc = await startService({
        ...FAKE,
        TOOLS_MODULE: "examples/tools/tickets.mjs",
        API_POLICY_PATH: "examples/tools/api-policy.yaml",
        TICKETS_API_URL: `http://${HOST}:${(upstream.address() as { port: number }).port}/api`,
        TICKETS_API_TOKEN: "ticket-token",
      });
      const paused = parseSse(await (await postChat(svc.base, '/call create_ticket {"title":"printer on fire"}')).text());
      const end = paused.at(-1)!;
      expect(end.data.status).toBe("awaiting_approval");
      const approval = end.data.approval as { approval_id: string; api: string; path: string };
      expect(approval).toMatchObject({ api: "tickets", method: "POST", path: "/tickets" });
      expect(hits).toEqual([]);
      const res = await fetch(`${svc.base}/threads/${end.data.thread_id}/approvals/${approval.approval_id}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ decision: "approve" }),
      });
      const resumed = parseSse(await res.text());
      expect(resumed.at(-1)!.data.status).toBe("ok");
      expect(hits).toEqual([{ method: "POST", url: "/api/tickets", auth: "Bearer ticket-token", body: JSON.stringify({ title: "printer on fire", body: "" }) }]);
    } finally {
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
    }
  });

  it("a module that does not load, or exports no tools, stops startup naming TOOLS_MODULE (exit 3)", async () => {
    for (const module of ["/nonexistent/tools.mjs", "examples/tools/api-policy.yaml", "package.json", "test/runtime/fixtures/not-tools.mjs"]) {
      const svc = spawnService({ ...FAKE, HOST, PORT: "0", TOOLS_MODULE: module, ENV_FILE: "/nonexistent/.env" });
      expect(await svc.exited, module).toBe(3);
      expect(svc.stderr(), module).toMatch(/^The service cannot start: TOOLS_MODULE /);
      expect(svc.stderr()).not.toMatch(/\n\s+at /);
    }
  });

  it("bad settings and the files they name that are not there are all named in one start (exit 2), before a module is loaded", async () => {
    const svc = spawnService({
      ...FAKE,
      HOST,
      PORT: "abc",
      RETENTION_DAYS: "x",
      RESPONSE_SCHEMA_PATH: "/nonexistent/schema.json",
      TOOLS_MODULE: "/nonexistent/tools.mjs",
      AUTH_CUSTOM_MODULE: "test/runtime/fixtures",
      ENV_FILE: "/nonexistent/.env",
    });
    expect(await svc.exited).toBe(2);
    expect(svc.stderr()).toBe(
      [
        "The service cannot start: invalid settings.",
        "  PORT: must be a whole number",
        "  RETENTION_DAYS: must be a whole number",
        "  RESPONSE_SCHEMA_PATH: names a file that does not exist",
        "  AUTH_CUSTOM_MODULE: names a directory, not a file",
        "  TOOLS_MODULE: names a file that does not exist",
        "",
      ].join("\n"),
    );
  });

  it("a file a setting names that is a directory stops startup naming the setting, never with a stack trace", async () => {
    const cases: [Record<string, string>, number, string][] = [
      [{ RESPONSE_SCHEMA_PATH: "test/runtime/fixtures" }, 2, "The service cannot start: invalid settings.\n  RESPONSE_SCHEMA_PATH: names a directory, not a file\n"],
      [{ API_POLICY_PATH: "test/runtime/fixtures" }, 3, "The service cannot start: the API policy has problems.\n  API_POLICY_PATH: names a file that cannot be read (EISDIR)\n"],
    ];
    for (const [env, code, stderr] of cases) {
      const svc = spawnService({ ...FAKE, HOST, PORT: "0", ...env, ENV_FILE: "/nonexistent/.env" });
      expect(await svc.exited, JSON.stringify(env)).toBe(code);
      expect(svc.stderr()).toBe(stderr);
    }
  });

  // The check asks for read access (R_OK), which root always has: run as root, the entry runs as
  // nobody, which needs the checkout readable by others (as a clone here is) and node runnable.
  it.runIf(process.getuid?.() !== 0 || (openToOthers(resolve("dist/node.js"), 0o004) && openToOthers(process.execPath, 0o001)))(
    "a file a setting names that the service may not read stops startup naming the setting and EACCES (exit 2)",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "unreadable-"));
      chmodSync(dir, 0o755);
      const file = join(dir, "schema.json");
      writeFileSync(file, "{}");
      chmodSync(file, 0o000);
      const as = process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : undefined;
      const svc = spawnEntry("node", { ...FAKE, HOST, PORT: "0", RESPONSE_SCHEMA_PATH: file, ENV_FILE: "/nonexistent/.env" }, process.cwd(), as);
      expect(await svc.exited).toBe(2);
      expect(svc.stderr()).toBe("The service cannot start: invalid settings.\n  RESPONSE_SCHEMA_PATH: names a file that cannot be read (EACCES)\n");
    },
  );

  it("an AUTH_CUSTOM_MODULE that does not load stops startup naming it (exit 2), without the module's own error", async () => {
    const svc = spawnService({ ...FAKE, HOST, PORT: "0", AUTH_POLICY: "custom", AUTH_CUSTOM_MODULE: "test/runtime/fixtures/throws-on-load.mjs", ENV_FILE: "/nonexistent/.env" });
    expect(await svc.exited).toBe(2);
    expect(svc.stderr()).toBe("The service cannot start: AUTH_CUSTOM_MODULE does not load (Error).\n");
  });

  it("an empty array is an agent with no tools, as createApp({ tools: [] }) makes it", async () => {
    const svc = await startService({ ...FAKE, TOOLS_MODULE: "test/runtime/fixtures/no-tools.mjs" });
    const answer = parseSse(await (await postChat(svc.base, "hello")).text());
    expect(answer.at(-1)!.data.status).toBe("ok");
    const called = parseSse(await (await postChat(svc.base, '/call calculator {"expression":"1+1"}')).text());
    // The default tools are gone: the model's call of one is answered as a call of no tool.
    expect(called.find((e) => e.event === "tool.result")?.data).toMatchObject({ name: "calculator", is_error: true, result: 'There is no tool named "calculator".' });
  });
});

describe("timeouts_ms.connect on the Node entry", () => {
  it("a connection not made within timeouts_ms.connect fails the call at once, long before the read timeout", async () => {
    await expectConnectTimeoutToFailTheCall("node");
  }, 30_000);
});

describe("trace export on the Node entry", () => {
  // The entry loads the OpenTelemetry SDK only when TRACING_ENABLED is on (tracing-lazy.ts): this
  // is the path that load takes, through the built entry as `npm start` runs it.
  it("with TRACING_ENABLED sends a chat's spans to the OTLP receiver; without it, sends nothing", async () => {
    const rx = await startOtlpReceiver();
    try {
      const on = await startService({ ...FAKE, TRACING_ENABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_BSP_SCHEDULE_DELAY: "20" });
      expect((await postChat(on.base, "hello")).status).toBe(200);
      const spans = await rx.waitFor((s) => s.some((x) => x.name.startsWith("invoke_agent")) && s.some((x) => x.name === "chat fake"));
      expect(spans.find((s) => s.name.startsWith("invoke_agent"))?.resource["service.name"]).toBeDefined();
      expect(rx.requests[0]?.contentType).toBe("application/x-protobuf");

      const before = rx.requests.length;
      const off = await startService({ ...FAKE, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_BSP_SCHEDULE_DELAY: "20" });
      await (await postChat(off.base, "hello")).text();
      await new Promise((r) => setTimeout(r, 300));
      expect(rx.requests.length).toBe(before);
    } finally {
      await rx.close();
    }
  });
});
