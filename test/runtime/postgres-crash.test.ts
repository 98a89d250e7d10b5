/**
 * CHECKPOINTER=sql at runtime: a replica killed mid-run (spec 3.1 ProcessLost, spec 8 lease
 * expiry), a database that is down or comes and goes (spec 4.4 /ready, 6.2 agent_database_up,
 * 6.3 one WARNING, 7.1 503), and thread retention (RETENTION_DAYS, spec 2.10).
 *
 * Needs the PostgreSQL at 127.0.0.1:5432 (user postgres, database test, trust auth), or
 * TEST_SQLDB_DSN, and a built dist/ (`npx tsup --silent`) for the child replica. Every schema
 * made here is dropped in afterAll.
 */
import type { ChildProcess } from "node:child_process";
import { connect as netConnect, createServer, type Server, type Socket } from "node:net";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/observability/logger.js";
import { parseSettings } from "../../src/settings/parse.js";
import type { PostgresAdapters } from "../../src/store/postgres/index.js";
import { sweepRetention } from "../../src/runs/retention.js";
import { threadLeases } from "../../src/runs/leases.js";
import { randomIds } from "../../src/ids.js";
import { chat, get, KEY, makeApp, post, readUntil, waitFor, type TestApp } from "../helpers.js";
import { createOrder, ordersPolicy } from "../support/orders.js";
import { scratchDatabase, TEST_DSN as DSN } from "../support/postgres.js";
import { spawnReplica } from "../support/replica-process.js";
import { freePort } from "../support/service-process.js";
import { empty, recordingUpstream } from "../support/upstream.js";

const DB = new URL(DSN);
const DB_HOST = DB.hostname || "127.0.0.1";
const DB_PORT = Number(DB.port || 5432);

/** Schemas, apps, handles and clients made here; closed and dropped in afterAll. */
const pg = scratchDatabase();
const { fresh, handle, admin } = pg;
const track = (app: Promise<TestApp>) => pg.track(app);
const children = new Set<ChildProcess>();

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await pg.cleanup();
});


const metric = async (a: TestApp, name: string) => {
  const text = await (await a.fetch(new Request("http://test/metrics"))).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
};

const timed = async <T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const t0 = performance.now();
  const value = await work();
  return { value, ms: performance.now() - t0 };
};

const ready = (a: TestApp) => timed(async () => {
  const res = await a.fetch(new Request("http://test/ready"));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
});

/** A guarded route's answer while the database is unreachable: 503 {detail, error_id}, timed. */
async function expect503(a: TestApp, request: () => Request, withinMs: number) {
  const { value: res, ms } = await timed(() => a.fetch(request()));
  expect(res.status, request().url).toBe(503);
  const body = (await res.json()) as { detail: string; error_id: string };
  expect(body.detail).toContain("(database unreachable)");
  expect(body.error_id).toMatch(/^\S+$/);
  expect(body.detail).toContain(body.error_id);
  expect(ms, request().url).toBeLessThan(withinMs);
}

const GUARDED = [
  () => post("/chat", { message: "hi", thread_id: "down-1" }),
  () => get("/threads"),
  () => get("/threads/down-1/messages"),
  () => get("/approvals"),
];

const unreachableWarnings = (a: TestApp) => a.logs.filter((l) => l.level === "WARNING" && l.message === "database unreachable");

// ---------------------------------------------------------------------------------------------
// a replica in a child process, killed with SIGKILL mid-run

describe("a replica killed mid-run (SIGKILL)", () => {
  const TTL_MS = 1_000;
  const RENEW_MS = 250;
  let schema: string;
  let child: ChildProcess;
  let childBase: string;
  let other: TestApp;
  let h: PostgresAdapters;
  let sql: postgres.Sql;

  beforeAll(async () => {
    schema = fresh();
    h = await handle(schema);
    sql = admin(schema);
    const replica = await spawnReplica(
      { SQLDB_DSN: DSN, TEST_SQL_SCHEMA: schema, TEST_LEASE_RENEW_MS: String(RENEW_MS), TEST_LEASE_TTL_MS: String(TTL_MS), TEST_API_KEY: KEY },
      children,
    );
    child = replica.child;
    childBase = replica.base;
    // the other replica, in this process, with the same short lease timings
    other = await track(makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: DSN, LOG_LEVEL: "WARNING" }, { sqlSchema: schema, leaseTimings: { renewMs: RENEW_MS, ttlMs: TTL_MS } }));
  });

  const childChat = (message: string, thread: string) =>
    fetch(`${childBase}/chat`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ message, thread_id: thread }),
    });

  it("the other replica answers 409 thread_busy until the lease expires, then takes the thread; the dead run becomes interrupted/ProcessLost; nothing written before is lost", async () => {
    // earlier runs through the child
    for (const message of ["first", "second"]) {
      const res = await childChat(message, "crash");
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("event: message.end");
    }
    const slow = await childChat("/sleep 60000\nslow", "crash");
    expect(slow.status).toBe(200);
    const { events, reader } = await readUntil(slow, (ev) => ev.some((e) => e.event === "message.start"));
    const deadRun = events[0]!.data.run_id as string;
    await waitFor(async () => (await h.store.getMessages("crash")).length === 5, 3_000);
    const before = await h.store.getMessages("crash");
    // let at least one renewal happen, so the lease that outlives the process is a renewed one
    await new Promise((r) => setTimeout(r, RENEW_MS + 100));

    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
    const killedAt = performance.now();
    await reader.cancel().catch(() => {});
    const [lease] = await sql`SELECT holder, (extract(epoch FROM expires_at - now()) * 1000)::int AS left_ms FROM leases WHERE thread_id = 'crash'`;
    expect(lease).toBeDefined();
    expect(lease!.left_ms).toBeGreaterThan(0);
    const expiresAt = killedAt + Number(lease!.left_ms);

    // 409 thread_busy while the dead process's lease runs, then the thread is taken
    const refusals: number[] = [];
    let accepted: Awaited<ReturnType<typeof chat>> | undefined;
    let acceptedAt = 0;
    while (performance.now() - killedAt < TTL_MS + 3_000) {
      const r = await chat(other, { message: "after the crash", thread_id: "crash" });
      if (r.res.status === 200) {
        accepted = r;
        acceptedAt = performance.now();
        break;
      }
      expect(r.res.status).toBe(409);
      expect(r.json.code).toBe("thread_busy");
      refusals.push(performance.now() - killedAt);
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(refusals.length).toBeGreaterThan(0);
    expect(accepted, "the thread was never taken over").toBeDefined();
    expect(accepted!.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    // not before the lease expired (a little slack for the two clocks), and soon after
    expect(acceptedAt).toBeGreaterThan(expiresAt - 100);
    expect(acceptedAt - expiresAt).toBeLessThan(1_000);

    // the dead run's record: running until marked; not marked a minute early; marked with a short grace
    expect((await h.store.getRun(deadRun))!.status).toBe("running");
    expect(await h.store.markLostRuns!(60_000)).toBe(0);
    expect(await h.store.markLostRuns!(200)).toBe(1);
    expect(await h.store.getRun(deadRun)).toMatchObject({ status: "interrupted", error_type: "ProcessLost" });
    expect(await h.store.markLostRuns!(200)).toBe(0);
    const runs = await h.store.listRuns("crash");
    expect(runs.map((r) => r.status).sort()).toEqual(["interrupted", "ok", "ok", "ok"]);

    // everything written before the kill is still there, in order, followed by the new run
    const after = await h.store.getMessages("crash");
    expect(after.slice(0, before.length)).toEqual(before);
    expect(before.map((m) => [m.role, m.content])).toEqual([
      ["user", "first"],
      ["assistant", "echo: first"],
      ["user", "second"],
      ["assistant", "echo: second"],
      ["user", "/sleep 60000\nslow"],
    ]);
    expect(after.slice(before.length).map((m) => m.content)).toEqual(["after the crash", "echo: after the crash"]);
    const viaHttp = (await (await other.fetch(get("/threads/crash/messages"))).json()) as unknown[];
    expect(viaHttp).toEqual(after);
  });
});

// ---------------------------------------------------------------------------------------------
// the database down, and coming back without a restart

/** A TCP proxy on a loopback port to the database that can be stopped, started or made silent. */
function dbProxy(port: number) {
  let server: Server | undefined;
  let frozen = false;
  const sockets = new Set<Socket>();
  const keep = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
  };
  const proxy = {
    port,
    /** `silent`: accepts connections and never answers (a database that hangs). */
    start(mode: "forward" | "silent" = "forward") {
      return new Promise<void>((resolve, reject) => {
        server = createServer((client) => {
          keep(client);
          if (mode === "silent") return;
          const upstream = netConnect(DB_PORT, DB_HOST);
          keep(upstream);
          // while frozen, bytes are dropped both ways: open connections hang without closing
          client.on("data", (d: Buffer) => void (frozen || upstream.write(d)));
          upstream.on("data", (d: Buffer) => void (frozen || client.write(d)));
          client.on("close", () => upstream.destroy());
          upstream.on("close", () => client.destroy());
        });
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      });
    },
    /** Open connections stay open but nothing passes any more (a database host that froze). */
    freeze() {
      frozen = true;
    },
    stop() {
      frozen = false;
      return new Promise<void>((resolve) => {
        if (!server) return resolve();
        const s = server;
        server = undefined;
        for (const socket of sockets) socket.destroy();
        s.close(() => resolve());
      });
    },
  };
  pg.onCleanup(() => proxy.stop());
  return proxy;
}

describe("the database down", () => {
  it("an app whose database port is closed starts, answers /ready 503 not_ready and guarded routes 503, shows agent_database_up 0, logs one WARNING", async () => {
    const port = await freePort();
    const started = await timed(() =>
      track(makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: `postgres://postgres@127.0.0.1:${port}/test` }, { sqlSchema: `never_${process.pid}` })),
    );
    const a = started.value;
    expect(started.ms).toBeLessThan(3_000);
    const r = await ready(a);
    expect(r.value).toEqual({ status: 503, body: { status: "not_ready" } });
    expect(r.ms).toBeLessThan(2_200);
    for (const request of GUARDED) await expect503(a, request, 3_000);
    for (const request of GUARDED) await expect503(a, request, 2_200);
    expect(await metric(a, "agent_database_up")).toBe(0);
    expect((await a.fetch(new Request("http://test/health"))).status).toBe(200);
    const warnings = unreachableWarnings(a);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).not.toHaveProperty("stack");
    expect(warnings[0]).not.toHaveProperty("traceback");
  });

  // Regression: a database unreachable at startup logs two WARNINGs for one outage (spec 6.3 wants one).
  it("an outage at startup logs exactly one WARNING before any request", async () => {
    const port = await freePort();
    const a = await track(makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: `postgres://postgres@127.0.0.1:${port}/test` }, { sqlSchema: `never_${process.pid}` }));
    expect(a.logs.filter((l) => l.level === "WARNING")).toHaveLength(1);
  });

  it("recovers without a restart: 503 while a proxy to the database is down, answers again once it is up, agent_database_up follows", async () => {
    const schema = fresh();
    const proxy = dbProxy(await freePort());
    // started while the database is unreachable
    const a = await track(makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: `postgres://postgres@127.0.0.1:${proxy.port}/test` }, { sqlSchema: schema }));
    expect((await ready(a)).value.status).toBe(503);
    await expect503(a, GUARDED[0]!, 3_000);
    expect(await metric(a, "agent_database_up")).toBe(0);
    expect(unreachableWarnings(a)).toHaveLength(1);

    // the database comes: the schema is made on first contact, requests succeed
    await proxy.start();
    await waitFor(async () => (await ready(a)).value.status === 200, 5_000);
    const first = await chat(a, { message: "while up", thread_id: "p1" });
    expect(first.res.status).toBe(200);
    expect(first.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    expect(await metric(a, "agent_database_up")).toBe(1);
    expect(a.logs.some((l) => l.message === "database reachable again")).toBe(true);

    // it goes away again (connections cut, port closed)
    await proxy.stop();
    const down = await ready(a);
    expect(down.value).toEqual({ status: 503, body: { status: "not_ready" } });
    expect(down.ms).toBeLessThan(2_200);
    for (const request of GUARDED) await expect503(a, request, 3_000);
    expect(await metric(a, "agent_database_up")).toBe(0);
    expect(unreachableWarnings(a)).toHaveLength(2); // one per outage, not one per request

    // a database that accepts connections but never answers: still answered within a few seconds
    await proxy.start("silent");
    const [hung, hungReady] = await Promise.all([expect503(a, GUARDED[2]!, 3_500), ready(a)]);
    void hung;
    expect(hungReady.value.status).toBe(503);
    expect(hungReady.ms).toBeLessThan(2_500);
    await proxy.stop();

    // back, without a restart: earlier data is there and new runs go through
    await proxy.start();
    await waitFor(async () => (await ready(a)).value.status === 200, 5_000);
    const messages = (await (await a.fetch(get("/threads/p1/messages"))).json()) as { content: string }[];
    expect(messages.map((m) => m.content)).toEqual(["while up", "echo: while up"]);
    const again = await chat(a, { message: "after recovery", thread_id: "p1" });
    expect(again.res.status).toBe(200);
    expect(await metric(a, "agent_database_up")).toBe(1);
    expect(unreachableWarnings(a)).toHaveLength(2);
  });
});

describe("a database that stops answering on open connections", () => {
  // Regression: a query on an already open connection to a database that stopped answering waits forever instead of 503.
  it("guarded routes answer 503 within a few seconds, also on connections opened before", async () => {
    const schema = fresh();
    const proxy = dbProxy(await freePort());
    await proxy.start();
    try {
      const a = await track(makeApp({ CHECKPOINTER: "sql", SQLDB_DSN: `postgres://postgres@127.0.0.1:${proxy.port}/test`, LOG_LEVEL: "WARNING" }, { sqlSchema: schema }));
      expect((await chat(a, { message: "warm", thread_id: "frozen" })).res.status).toBe(200);
      proxy.freeze();
      const answers = await Promise.all(
        [get("/threads"), get("/threads/frozen/messages")].map((request) =>
          Promise.race([a.fetch(request).then((r) => r.status), new Promise((r) => setTimeout(() => r("no answer in 4 s"), 4_000))]),
        ),
      );
      expect(answers).toEqual([503, 503]);
    } finally {
      await proxy.stop(); // cuts the hung connections, so nothing waits on them at close
    }
  });
});

// ---------------------------------------------------------------------------------------------
// retention

describe("retention (RETENTION_DAYS=1)", () => {
  const upstream = recordingUpstream(empty);

  const POLICY = ordersPolicy({ methods: ["POST"] });

  it("deletes threads idle more than a day with their messages, runs and approvals; skips a thread whose lease is held; keeps recent ones", async () => {
    const schema = fresh();
    const T0 = Date.parse("2026-03-01T12:00:00Z");
    const DAY = 86_400_000;
    const clock = { t: T0, now: () => clock.t };
    const a = await track(
      makeApp(
        { CHECKPOINTER: "sql", SQLDB_DSN: DSN, RETENTION_DAYS: "1", ORDERS_URL: upstream.base, LOG_LEVEL: "WARNING" },
        { sqlSchema: schema, clock, policyText: POLICY, tools: [createOrder], sweepIntervalMs: 3_600_000 },
      ),
    );
    expect(a.settings.RETENTION_DAYS).toBe(1);
    for (const thread of ["old", "busy"]) expect((await chat(a, { message: `hello ${thread}`, thread_id: thread })).res.status).toBe(200);
    const gated = await chat(a, { message: "/call create_order {}", thread_id: "gated" });
    expect(gated.events.at(-1)!.data.status).toBe("awaiting_approval");
    clock.t = T0 + 1.5 * DAY;
    expect((await chat(a, { message: "hello fresh", thread_id: "fresh" })).res.status).toBe(200);

    const h = await handle(schema);
    const sql = admin(schema);
    const count = async (table: string, thread: string) =>
      Number((await sql.unsafe(`SELECT count(*)::int AS n FROM ${table} WHERE thread_id = $1`, [thread]))[0]!.n);
    expect(await count("approvals", "gated")).toBe(1);
    expect(await count("runs", "old")).toBe(1);

    const held = (await h.lease.acquire("busy", "another-replica:run", 10_000))!;
    expect(held).not.toBeNull();

    const sweepAt = { t: T0 + 2 * DAY };
    const deps = {
      store: h.store,
      leases: threadLeases(h.lease, { instanceId: "retention-test", ids: randomIds, timings: { renewMs: 100, ttlMs: 1_000 } }),
      clock: { now: () => sweepAt.t },
      logger: silentLogger,
    };

    expect(await sweepRetention(deps, 0)).toBe(0);
    expect(await sweepRetention(deps, 1)).toBe(2);
    for (const thread of ["old", "gated"]) {
      expect(await h.store.getThread(thread)).toBeNull();
      for (const table of ["messages", "runs", "approvals"]) expect(await count(table, thread), `${table} of ${thread}`).toBe(0);
      expect((await a.fetch(get(`/threads/${thread}/messages`))).status).toBe(404);
    }
    for (const thread of ["busy", "fresh"]) {
      expect(await h.store.getThread(thread)).not.toBeNull();
      expect(await count("messages", thread)).toBe(2);
      expect(await count("runs", thread)).toBe(1);
    }
    // the held lease is untouched and no retention lease is left behind
    expect(await h.lease.isHeld("busy")).toBe(true);
    expect((await sql`SELECT holder FROM leases WHERE expires_at > now()`).map((r) => r.holder)).toEqual(["another-replica:run"]);

    // once the lease is released the next sweep takes it
    await h.lease.release(held);
    expect(await sweepRetention(deps, 1)).toBe(1);
    expect(await h.store.getThread("busy")).toBeNull();
    expect(await count("messages", "busy")).toBe(0);

    // idleness is checked again under the lease: a thread listed as idle but written since is kept
    const stale = { ...deps, store: { ...h.store, idleThreads: async () => ["fresh"] } };
    expect(await sweepRetention(stale, 1)).toBe(0);
    expect(await h.store.getThread("fresh")).not.toBeNull();
    // and it goes once it has been idle for more than a day
    sweepAt.t = T0 + 2.6 * DAY;
    expect(await sweepRetention(deps, 1)).toBe(1);
    expect((await h.store.listThreads({ limit: 100, offset: 0 })).map((t) => t.thread_id)).toEqual([]);
  });
});
