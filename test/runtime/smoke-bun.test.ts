/**
 * The smoke suite (smoke.ts) on Bun: the built entry (dist/bun.js, as `npm run start:bun` runs
 * it) with the memory store and with CHECKPOINTER=sql on the local PostgreSQL (smoke-postgres.ts),
 * and the single executable `npm run build:binary` makes (`bun build --compile`, the same
 * command, written to a temporary folder and run from there).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { entryStarter, killSpawned, startEntry, stopEntry } from "../support/service-process.js";
import { expectHangingCallsToTimeOut } from "./hanging-call.js";
import { describeSmoke } from "./smoke.js";
import { smokeSchema } from "./smoke-postgres.js";
import { ENTRY_SCRIPTS, scriptCommand } from "../../scripts/lib/entry-scripts.mjs";
import { existsSync } from "node:fs";

// A safety net only: each suite stops its service itself (SIGTERM, then the exit code is checked).
afterAll(killSpawned);

it("the suite runs what `npm run start:bun` runs: the built bun entry, which exists", () => {
  const { args } = scriptCommand(process.cwd(), ENTRY_SCRIPTS.bun) as { args: string[] };
  const entry = args.find((a) => a.endsWith("dist/bun.js"));
  expect(entry).toBeDefined();
  expect(existsSync(entry!)).toBe(true);
});

describeSmoke("bun, memory", entryStarter("bun"));

it("calls to an API that never answers fail at its read timeout, one after another (the calls' shared deadline timer)", async () => {
  await expectHangingCallsToTimeOut("bun");
}, 30_000);

it("a stream that says nothing for longer than Bun's default idle timeout (10 s; Bun cuts such a stream at about 12 s) stays open to its end", async () => {
  // dist/bun.js serves with idleTimeout 0: the heartbeat (here every 30 s, so none comes) and the
  // run's own limits decide how long a quiet stream lasts, not Bun.
  const svc = await startEntry("bun", { API_KEY: "idle-key-0123456789", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", SSE_HEARTBEAT_S: "30" });
  try {
    const res = await fetch(`${svc.base}/chat`, {
      method: "POST",
      headers: { Authorization: "Bearer idle-key-0123456789", "Content-Type": "application/json" },
      body: JSON.stringify({ message: "/sleep 16000\nstill here" }),
    });
    const text = await res.text();
    expect(text).toContain("echo: still here");
    expect(text).toMatch(/event: message\.end\ndata: \{[^\n]*"status":"ok"/);
  } finally {
    expect(await stopEntry(svc)).toBe(0);
  }
}, 40_000);

const pg = smokeSchema("smoke_bun");
describeSmoke("bun, postgres", entryStarter("bun", pg.env));
pg.expectRows("bun, postgres");

let dir: string | undefined;
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describeSmoke(
  "bun binary, memory",
  entryStarter(async () => {
    dir = mkdtempSync(join(tmpdir(), "agent-binary-"));
    const binary = join(dir, "agent-service");
    // build:binary's own command (the part after its tsup step), writing to the temporary folder
    const scripts = (JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> }).scripts;
    const compile = scripts["build:binary"]!.split("&&").at(-1)!.trim().replace(/--outfile \S+/, `--outfile ${binary}`).split(/\s+/);
    if (compile[0] !== "bun" || !compile.includes("--compile")) throw new Error(`build:binary is not a bun build --compile: ${scripts["build:binary"]}`);
    execFileSync("node_modules/.bin/bun", compile.slice(1), { stdio: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", DO_NOT_TRACK: "1" } });
    return [binary];
  }),
);
