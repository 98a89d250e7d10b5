/**
 * What the Bun and Deno entries share with the Node entry beyond the smoke suite (node.test.ts
 * covers Node): the drain on SIGTERM, invalid settings and a port in use stopping startup with the
 * same lines and exit codes, the JSON startup lines, and the env file below the environment.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { answerText, parseSse, readRest, readUntil } from "../helpers.js";
import { startOtlpReceiver } from "../support/otlp-receiver.js";
import { HOST, killSpawnedAfterEach, type RuntimeName, spawnEntry, startEntry } from "../support/service-process.js";

killSpawnedAfterEach();

const KEY = "k";
const FAKE = { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_FORMAT: "json" };

const postChat = (base: string, message: string) =>
  fetch(`${base}/chat`, { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" }, body: JSON.stringify({ message }) });

describe.each<RuntimeName>(["bun", "deno"])("%s entry", (runtime) => {
  it("on SIGTERM lets a run in progress finish, then exits 0; every stdout line is JSON", async () => {
    const svc = await startEntry(runtime, { ...FAKE, DRAIN_GRACE_S: "10" });
    const res = await postChat(svc.base, "/sleep 1500\nhi");
    expect(res.status).toBe(200);
    const { reader, text: head } = await readUntil(res, (events) => events.some((e) => e.event === "message.start"));
    expect(svc.child.kill("SIGTERM")).toBe(true);
    const events = parseSse(await readRest(reader, head));
    expect(answerText(events)).toBe("echo: hi");
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(await svc.exited).toBe(0);
    const lines = svc.stdout().split("\n").filter((l) => l !== "");
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((l) => JSON.parse(l).message)).toEqual(expect.arrayContaining([`Agent service listening on ${svc.base}`, "SIGTERM: draining 1 run(s)"]));
  });

  it("invalid settings stop startup naming every bad variable (exit 2)", async () => {
    const svc = spawnEntry(runtime, { ...FAKE, HOST, PORT: "abc", MODEL_TIMEOUT_S: "-1", ENV_FILE: "/nonexistent/.env" });
    expect(await svc.exited).toBe(2);
    expect(svc.stderr()).toMatch(/^The service cannot start: invalid settings\.\n/);
    expect(svc.stderr()).toMatch(/\bPORT\b/);
    expect(svc.stderr()).toMatch(/\bMODEL_TIMEOUT_S\b/);
  });

  it("a port in use stops startup with one line naming PORT, no stack (exit 2)", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, HOST, r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const svc = spawnEntry(runtime, { ...FAKE, HOST, PORT: String(port), ENV_FILE: "/nonexistent/.env" });
      expect(await svc.exited).toBe(2);
      expect(svc.stderr().split("\n").filter((l) => l !== "")).toEqual([`The service cannot start: PORT ${port} on HOST ${HOST} is in use.`]);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it("reads ENV_FILE below the process environment", async () => {
    const dir = mkdtempSync(join(tmpdir(), "entry-env-"));
    const file = join(dir, "service.env");
    writeFileSync(file, "MODEL_PROVIDER=fake\nMODEL_NAME=fake\nAPI_KEY=from-file\nA2A_NAME=from_file\n");
    const svc = await startEntry(runtime, { ENV_FILE: file, API_KEY: KEY, LOG_FORMAT: "json" });
    // the process variable wins for API_KEY; the file gives the rest
    expect((await postChat(svc.base, "hi")).status).toBe(200);
    const res = await fetch(`${svc.base}/a2a/from_file/.well-known/agent-card.json`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: "from_file" });
  });

  it("with TRACING_ENABLED exports the chat's spans over OTLP/HTTP (protobuf) to a loopback receiver", async () => {
    const rx = await startOtlpReceiver();
    try {
      const svc = await startEntry(runtime, { ...FAKE, TRACING_ENABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_BSP_SCHEDULE_DELAY: "50", OTEL_SERVICE_NAME: `agent-on-${runtime}` });
      expect(answerText(parseSse(await (await postChat(svc.base, "hi")).text()))).toBe("echo: hi");
      const spans = await rx.waitFor((all) => all.some((s) => s.name === "POST /chat") && all.some((s) => s.name.startsWith("invoke_agent")), 10_000);
      expect(spans.find((s) => s.name === "POST /chat")!.resource["service.name"]).toBe(`agent-on-${runtime}`);
      expect(rx.requests.every((r) => r.contentType === "application/x-protobuf")).toBe(true);
    } finally {
      await rx.close();
    }
  });

  it.runIf(runtime === "bun")(
    "an SSE stream idle past Bun's default 10 s idle timeout is not cut",
    async () => {
      const svc = await startEntry(runtime, FAKE);
      const events = parseSse(await (await postChat(svc.base, "/sleep 11000\nlate")).text());
      expect(answerText(events)).toBe("echo: late");
      expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    },
    20_000,
  );
});

describe.each<RuntimeName>(["node", "bun", "deno"])("%s entry and the env file", (runtime) => {
  it("reads only ENV_FILE: a .env in the working directory is not loaded behind its back (Bun would by default)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "entry-dotenv-"));
    writeFileSync(join(dir, ".env"), "A2A_NAME=from_dotenv\nAPI_KEY=from-dotenv\n");
    writeFileSync(join(dir, "service.env"), "A2A_NAME=from_env_file\n");
    const svc = await startEntry(runtime, { ...FAKE, ENV_FILE: join(dir, "service.env") }, { cwd: dir });
    const card = (name: string) => fetch(`${svc.base}/a2a/${name}/.well-known/agent-card.json`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect((await card("from_env_file")).status).toBe(200);
    expect((await card("from_dotenv")).status).toBe(404);
  });

  it("an env file that cannot be read or has a bad line stops startup naming the file and the line, never a value (exit 2)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "entry-badenv-"));
    const file = join(dir, "service.env");
    writeFileSync(file, "API_KEY=env-secret-4b1d\nnot a setting\n");
    const bad = spawnEntry(runtime, { ...FAKE, HOST, PORT: "0", ENV_FILE: file });
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toBe(`The service cannot start: the env file ${file}: env file line 2 is not KEY=value.\n`);
    const directory = spawnEntry(runtime, { ...FAKE, HOST, PORT: "0", ENV_FILE: dir });
    expect(await directory.exited).toBe(2);
    expect(directory.stderr()).toBe(`The service cannot start: the env file ${dir} cannot be read (EISDIR).\n`);
  });

  it("names a bad value and a setting's missing file in one start (exit 2)", async () => {
    const svc = spawnEntry(runtime, { ...FAKE, HOST, PORT: "abc", RESPONSE_SCHEMA_PATH: "/nonexistent/schema.json", ENV_FILE: "/nonexistent/.env" });
    expect(await svc.exited).toBe(2);
    expect(svc.stderr()).toBe("The service cannot start: invalid settings.\n  PORT: must be a whole number\n  RESPONSE_SCHEMA_PATH: names a file that does not exist\n");
  });
});

