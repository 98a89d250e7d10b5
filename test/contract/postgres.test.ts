/**
 * The store and lease contracts against the real PostgreSQL at 127.0.0.1:5432 (user postgres,
 * database test; `.ci/run` starts it if it is installed and down). Each run uses a schema of its
 * own, dropped afterwards.
 */
import postgres from "postgres";
import { afterAll, beforeAll } from "vitest";
import { openPostgres } from "../../src/store/postgres/index.js";
import { silentLogger } from "../../src/observability/logger.js";
import { describeLeaseContract } from "./lease.js";
import { describeStoreContract } from "./store.js";

export const TEST_DSN = process.env.TEST_SQLDB_DSN ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `contract_${process.pid}_${Date.now().toString(36)}`;
let adapters: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  adapters = await openPostgres({ dsn: TEST_DSN, min: 1, max: 10, schema, logger: silentLogger, onHealth: () => {} });
  await adapters.store.ping();
});
afterAll(async () => {
  await adapters?.store.close();
  const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sql.end();
});

describeStoreContract("postgres", async () => ({ store: adapters.store }));

describeLeaseContract("postgres", async () => ({
  lease: adapters.lease,
  scale: 0.1,
  clock: { advance: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) },
}));
