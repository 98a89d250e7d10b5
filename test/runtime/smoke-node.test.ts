/**
 * The smoke suite (smoke.ts) on the built Node entry (dist/node.js) as a process on loopback:
 * with the memory store, and with CHECKPOINTER=sql on the local PostgreSQL (TEST_DSN, a schema
 * of its own, dropped afterwards: smoke-postgres.ts).
 */
import { afterAll, expect, it } from "vitest";
import { entryStarter, killSpawned } from "../support/service-process.js";
import { expectHangingCallsToTimeOut } from "./hanging-call.js";
import { describeSmoke } from "./smoke.js";
import { smokeSchema } from "./smoke-postgres.js";
import { ENTRY_SCRIPTS, scriptCommand } from "../../scripts/lib/entry-scripts.mjs";
import { existsSync } from "node:fs";

// A safety net only: each suite stops its service itself (SIGTERM, then the exit code is checked).
afterAll(killSpawned);

it("the suite runs what `npm start` runs: the built node entry, which exists", () => {
  const { args } = scriptCommand(process.cwd(), ENTRY_SCRIPTS.node) as { args: string[] };
  const entry = args.find((a) => a.endsWith("dist/node.js"));
  expect(entry).toBeDefined();
  expect(existsSync(entry!)).toBe(true);
});

describeSmoke("node, memory", entryStarter("node"));

it("calls to an API that never answers fail at its read timeout, one after another (the calls' shared deadline timer)", async () => {
  await expectHangingCallsToTimeOut("node");
}, 30_000);

const pg = smokeSchema("smoke_node");
describeSmoke("node, postgres", entryStarter("node", pg.env));
pg.expectRows("node, postgres");
