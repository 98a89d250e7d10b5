/**
 * The smoke suite's PostgreSQL columns for the process entries (Node, Bun, Deno): a schema of the
 * local PostgreSQL (TEST_DSN) made before the file's suites and dropped after them, the settings
 * that put an entry on it (CHECKPOINTER=sql, SQLDB_DSN with that search_path), and a count of
 * what landed there, so a column proves the entry picked the PostgreSQL adapters rather than
 * answering from memory.
 */
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { dropSchemas, newSchemaName, TEST_DSN } from "../support/postgres.js";

export interface SmokeSchema {
  /** The settings for `entryStarter`: CHECKPOINTER=sql on the schema. */
  env(): Record<string, string>;
  /** Registers a test, to define after the column's describeSmoke, that its rows are in the schema. */
  expectRows(column: string): void;
}

/** Registers the schema's beforeAll (made) and afterAll (dropped). */
export function smokeSchema(prefix: string): SmokeSchema {
  const schema = newSchemaName(prefix);
  beforeAll(async () => {
    const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
    await sql.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await sql.end();
  });
  afterAll(() => dropSchemas([schema]));
  const dsn = new URL(TEST_DSN);
  dsn.searchParams.set("search_path", schema);
  const env = { CHECKPOINTER: "sql", SQLDB_DSN: dsn.toString() };

  return {
    env: () => env,
    // Defined after the column's suite, so it runs after it (a file's tests run in the order they
    // are defined): the suite's threads and its one approved call are rows of the schema.
    expectRows(column) {
      it(`${column}: the column's threads and its approved call are rows in PostgreSQL`, async () => {
        const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
        try {
          const [threads] = await sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM "${schema}".threads`);
          const [approvals] = await sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM "${schema}".approvals WHERE status = 'approved'`);
          expect(threads!.n).toBeGreaterThanOrEqual(4);
          expect(approvals!.n).toBe(1);
        } finally {
          await sql.end();
        }
      });
    },
  };
}
