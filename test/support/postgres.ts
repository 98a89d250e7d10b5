/**
 * Tests against the real PostgreSQL at 127.0.0.1:5432 (user postgres, database test, trust auth),
 * or TEST_SQLDB_DSN: throwaway schemas, and what a test file opens on them, closed and dropped
 * by `cleanup()` (call it from the file's afterAll).
 */
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { silentLogger } from "../../src/observability/logger.js";
import { openPostgres, type PostgresAdapters } from "../../src/store/postgres/index.js";

export const TEST_DSN = process.env.TEST_SQLDB_DSN ?? "postgres://postgres@127.0.0.1:5432/test";

/** A schema name of this process, unused so far (`<prefix>_<pid>_<random>`). */
export const newSchemaName = (prefix = "t") => `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;

/** Drops the schemas (IF EXISTS, CASCADE) over a connection of its own. */
export async function dropSchemas(schemas: Iterable<string>, dsn = TEST_DSN): Promise<void> {
  const sql = postgres(dsn, { max: 1, onnotice: () => {} });
  for (const s of schemas) await sql.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await sql.end();
}

/** What `cleanup()` closes: an app (`close()`) is all it needs to know. */
interface Closable {
  close(): Promise<void>;
}

/** Where a scratch database's lists of open things stand (`mark()`), for `closeSince()`. */
export interface OpenMark {
  readonly apps: number;
  readonly handles: number;
  readonly admins: number;
}

/** Apps in parallel (after a database outage a pool takes its whole 5 s end timeout to close), then handles, then clients. */
async function closeAll(apps: readonly Closable[], handles: readonly PostgresAdapters[], admins: readonly postgres.Sql[]): Promise<void> {
  await Promise.all(apps.map((a) => a.close().catch(() => {})));
  for (const h of handles) await h.store.close().catch(() => {});
  for (const s of admins) await s.end({ timeout: 5 }).catch(() => {});
}

/**
 * Schemas, apps, store handles and plain clients a test file opens; `cleanup()` closes them, then
 * runs the extra closers, then drops every schema made with `fresh()`. A file that opens many
 * (each app's pool holds up to DB_POOL_MAX_SIZE connections) closes what a test or a describe
 * block opened once it is done with it, with `mark()` and `closeSince()`: the server's
 * max_connections (100 by default) is shared by the two test files that run at once.
 */
export function scratchDatabase(dsn = TEST_DSN) {
  const schemas: string[] = [];
  const apps: Closable[] = [];
  const handles: PostgresAdapters[] = [];
  const admins: postgres.Sql[] = [];
  const closers: (() => Promise<void>)[] = [];
  /** A plain client whose search_path is the schema, for checks the ports do not offer. */
  const admin = (schema: string): postgres.Sql => {
    const sql = postgres(dsn, { max: 2, onnotice: () => {}, connection: { search_path: schema } });
    admins.push(sql);
    return sql;
  };

  return {
    /** A new schema name, dropped at cleanup. */
    fresh(): string {
      const s = newSchemaName();
      schemas.push(s);
      return s;
    },

    /** An app, closed at cleanup. */
    async track<A extends Closable>(app: A | Promise<A>): Promise<A> {
      const a = await app;
      apps.push(a);
      return a;
    },

    /** A handle on the schema, for the store and lease directly. */
    async handle(schema: string): Promise<PostgresAdapters> {
      const h = await openPostgres({ dsn, min: 1, max: 4, schema, logger: silentLogger, onHealth: () => {} });
      handles.push(h);
      return h;
    },

    admin,

    /** Runs `during` while a second connection holds `lock` (a statement in its open transaction), then rolls it back. */
    async holding<T>(schema: string, lock: string, params: readonly string[], during: () => Promise<T>): Promise<T> {
      const other = await admin(schema).reserve();
      try {
        await other`BEGIN`;
        await other.unsafe(lock, params as string[]);
        return await during();
      } finally {
        await other`ROLLBACK`;
        other.release();
      }
    },

    /** Something else to close at cleanup, after the apps, handles and clients. */
    onCleanup(close: () => Promise<void>): void {
      closers.push(close);
    },

    /** Where the lists of open apps, handles and clients stand now. */
    mark(): OpenMark {
      return { apps: apps.length, handles: handles.length, admins: admins.length };
    },

    /** Closes the apps, handles and clients opened since `mark` (their schemas stay until cleanup). */
    async closeSince(mark: OpenMark): Promise<void> {
      await closeAll(apps.splice(mark.apps), handles.splice(mark.handles), admins.splice(mark.admins));
    },

    async cleanup(): Promise<void> {
      await closeAll(apps.splice(0), handles.splice(0), admins.splice(0));
      for (const close of closers) await close().catch(() => {});
      await dropSchemas(schemas, dsn);
    },
  };
}

export type ScratchDatabase = ReturnType<typeof scratchDatabase>;

/**
 * Closes what is opened between two hooks of the calling file or describe block: around `each`
 * test (what the test opened, not what a beforeAll did), or around the whole `block` (what its
 * beforeAll opened; call it before the block's own beforeAll).
 */
export function closeWhenDone(pg: ScratchDatabase, scope: "each" | "block"): void {
  const [before, after] = scope === "each" ? [beforeEach, afterEach] : [beforeAll, afterAll];
  let mark: OpenMark | undefined;
  before(() => {
    mark = pg.mark();
  });
  after(async () => {
    if (mark) await pg.closeSince(mark);
  });
}

/**
 * A database of its own on the TEST_DSN server (`<prefix>_<pid>_<random>`), for a client that
 * cannot be given a schema: Miniflare hands a worker its own connection string for a Hyperdrive
 * binding, without the query, so no `search_path` gets through. Made now; `drop()` removes it
 * with whatever is still connected.
 */
export async function freshDatabase(prefix: string): Promise<{ readonly dsn: URL; drop(): Promise<void> }> {
  const name = newSchemaName(prefix);
  const admin = async (statement: string) => {
    const sql = postgres(TEST_DSN, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(statement);
    } finally {
      await sql.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const dsn = new URL(TEST_DSN);
  dsn.pathname = `/${name}`;
  return { dsn, drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}
