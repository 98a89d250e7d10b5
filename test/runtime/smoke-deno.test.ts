/**
 * The smoke suite (smoke.ts) on the built Deno entry (dist/deno.js) as a process on loopback: with
 * the memory store, and with CHECKPOINTER=sql on the local PostgreSQL (smoke-postgres.ts).
 */
import { afterAll, expect, it } from "vitest";
import { entryStarter, killSpawned } from "../support/service-process.js";
import { expectHangingCallsToTimeOut } from "./hanging-call.js";
import { describeSmoke } from "./smoke.js";
import { compilationModes, HOT_SCRIPT } from "../support/v8-compilations.js";
import { smokeSchema } from "./smoke-postgres.js";
import { ENTRY_SCRIPTS, scriptCommand } from "../../scripts/lib/entry-scripts.mjs";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A safety net only: each suite stops its service itself (SIGTERM, then the exit code is checked).
afterAll(killSpawned);

it("the suite runs what `npm run start:deno` runs: the built deno entry, which exists", () => {
  const { args } = scriptCommand(process.cwd(), ENTRY_SCRIPTS.deno) as { args: string[] };
  const entry = args.find((a) => a.endsWith("dist/deno.js"));
  expect(entry).toBeDefined();
  expect(existsSync(entry!)).toBe(true);
});

it("`npm run start:deno` has V8 compile optimized code on the main thread, not on its compiler threads", () => {
  // As `npm start` does on Node: the compiler threads' malloc'd memory stayed after a burst of
  // waiting conversations (README, "Runtimes"). Deno passes --v8-flags to V8; --trace-opt names
  // each compilation and its mode.
  const { command, args, env } = scriptCommand(process.cwd(), ENTRY_SCRIPTS.deno) as { command: string; args: string[]; env: Record<string, string> };
  const flags = args.find((a) => a.startsWith("--v8-flags="));
  expect(flags?.split("=").slice(1).join("=").split(",")).toContain("--no-concurrent-recompilation");
  const dir = mkdtempSync(join(tmpdir(), "deno-opt-"));
  const script = join(dir, "hot.js");
  writeFileSync(script, HOT_SCRIPT);
  const modes = (v8Flags: string) =>
    compilationModes(command, ["run", "--no-config", `--v8-flags=${v8Flags}`, script], { ...process.env, ...env, DENO_DIR: join(dir, "cache") });
  try {
    const compiled = modes(`${flags!.slice("--v8-flags=".length)},--trace-opt`);
    expect(compiled.length).toBeGreaterThan(0);
    expect(compiled.every((mode) => mode === "synchronous")).toBe(true);
    expect(modes("--trace-opt")).toContain("concurrent");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

describeSmoke("deno, memory", entryStarter("deno"));

it("calls to an API that never answers fail at its read timeout, one after another (the calls' shared deadline timer)", async () => {
  await expectHangingCallsToTimeOut("deno");
}, 30_000);

const pg = smokeSchema("smoke_deno");
describeSmoke("deno, postgres", entryStarter("deno", pg.env));
pg.expectRows("deno, postgres");
