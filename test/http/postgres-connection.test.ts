/**
 * SQLDB_DSN as libpq reads it (its query parameters honoured), DB_POOL_MIN_SIZE, and a database
 * that refuses the login or does not exist (spec 7.1): guarded requests answer 503
 * `{detail, error_id}`, and the log says what the server said (the role or the database), never
 * the password. Needs the PostgreSQL at 127.0.0.1:5432 (trust auth).
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { chat, get, makeApp, post, readUntil, type TestApp } from "../helpers.js";
import { scratchDatabase, TEST_DSN } from "../support/postgres.js";

const pg = scratchDatabase();
afterAll(() => pg.cleanup());

let app: TestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe("a database that refuses the connection", () => {
  for (const [what, dsn, said] of [
    ["a database that does not exist", "postgres://postgres:pw-secret-1@127.0.0.1:5432/no_such_database_here", /database "no_such_database_here" does not exist/],
    ["a role that does not exist", "postgres://no_such_role_here:pw-secret-1@127.0.0.1:5432/test", /role "no_such_role_here" does not exist/],
  ] as const) {
    it(`${what}: 503 with a reference, one WARNING naming the cause, no secret`, async () => {
      app = await makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: dsn }, { sqlSchema: "never_made" });
      for (let i = 0; i < 3; i++) {
        const res = await app.fetch(get("/threads"));
        expect(res.status).toBe(503);
        const body = (await res.json()) as { detail: string; error_id: string };
        expect(body.error_id).toMatch(/^[0-9a-f]{16}$/);
        expect(body.detail).toContain(body.error_id);
      }
      expect((await app.fetch(new Request("http://test/ready"))).status).toBe(503);
      const warnings = app.logs.filter((l) => l.message === "database refused the connection");
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]!.reason)).toMatch(said);
      expect(app.rawLogs.join("\n")).not.toContain("pw-secret-1");
    });
  }
});

describe("SQLDB_DSN parameters and the pool", () => {
  it("honours application_name, server settings and connect_timeout from the DSN, and opens DB_POOL_MIN_SIZE connections at start", async () => {
    const name = `agent-dsn-${process.pid}-${Date.now()}`;
    const schema = pg.fresh();
    app = await makeApp(
      { CHECKPOINTER: "sql", SQLDB_DSN: `${TEST_DSN}?application_name=${name}&TimeZone=Pacific%2FAuckland&connect_timeout=3`, DB_POOL_MIN_SIZE: "3" },
      { sqlSchema: schema },
    );
    const sql = pg.admin(schema);
    const rows = await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${name}`;
    expect(rows[0]!.n).toBe(3);
    expect((await chat(app, { message: "hello" })).res.status).toBe(200);
  });

  it("a waiting run holds no connection: with DB_POOL_MAX_SIZE=1, twenty runs wait on their model while a new chat and GET /threads answer", async () => {
    const name = `agent-idle-${process.pid}-${Date.now()}`;
    const schema = pg.fresh();
    app = await makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: `${TEST_DSN}?application_name=${name}`, DB_POOL_MIN_SIZE: "1", DB_POOL_MAX_SIZE: "1" }, { sqlSchema: schema });
    const waiting = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const res = await app!.fetch(post("/chat", { message: "/sleep 60000\nwait" }));
        expect(res.status).toBe(200);
        return (await readUntil(res, (events) => events.some((e) => e.event === "message.start"))).reader;
      }),
    );
    try {
      const answered = await chat(app, { message: "hello" });
      expect(answered.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      expect((await app.fetch(get("/threads"))).status).toBe(200);
      const sql = pg.admin(schema);
      const rows = await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${name}`;
      expect(rows[0]!.n).toBe(1);
    } finally {
      await Promise.all(waiting.map((reader) => reader.cancel()));
    }
  });

  it("refuses an sslmode libpq does not know, naming SQLDB_DSN", async () => {
    await expect(makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: `${TEST_DSN}?sslmode=sometimes` })).rejects.toThrow(/SQLDB_DSN has an sslmode/);
  });
});
