/**
 * The smoke suite (smoke.ts) on the built Node entry (dist/node.js) as a process on loopback:
 * with the memory store, and with CHECKPOINTER=sql on the local PostgreSQL (TEST_DSN, a schema
 * of its own, dropped afterwards).
 */
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { entryStarter, killSpawned } from "../support/service-process.js";
import { dropSchemas, newSchemaName, TEST_DSN } from "../support/postgres.js";
import { describeSmoke } from "./smoke.js";
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

const schema = newSchemaName("smoke");
beforeAll(async () => {
  const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
  await sql.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await sql.end();
});
afterAll(() => dropSchemas([schema]));

describeSmoke(
  "node, postgres",
  entryStarter("node", () => {
    const dsn = new URL(TEST_DSN);
    dsn.searchParams.set("search_path", schema);
    return { CHECKPOINTER: "sql", SQLDB_DSN: dsn.toString() };
  }),
);
