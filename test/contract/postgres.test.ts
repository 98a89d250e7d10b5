/**
 * The store and lease contracts against the real PostgreSQL at 127.0.0.1:5432 (user postgres,
 * database test; `.ci/run` starts it if it is installed and down). Each run uses a schema of its
 * own, dropped afterwards.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { openPostgres } from "../../src/store/postgres/index.js";
import { silentLogger } from "../../src/observability/logger.js";
import { dropSchemas, TEST_DSN } from "../support/postgres.js";
import { describeLeaseContract } from "./lease.js";
import { describeStoreContract } from "./store.js";

export { TEST_DSN };
const schema = `contract_${process.pid}_${Date.now().toString(36)}`;
let adapters: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  adapters = await openPostgres({ dsn: TEST_DSN, min: 1, max: 10, schema, logger: silentLogger, onHealth: () => {} });
  await adapters.store.ping();
});
afterAll(async () => {
  await adapters?.store.close();
  await dropSchemas([schema]);
});

it("answers ping", async () => {
  await expect(adapters.store.ping()).resolves.toBeUndefined();
});

describeStoreContract("postgres", async () => ({ store: adapters.store }));

describeLeaseContract("postgres", async () => ({
  lease: adapters.lease,
  scale: 0.1,
  clock: { advance: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) },
}));
