/**
 * Where the worker keeps its state, from its bindings:
 * - a Hyperdrive binding HYPERDRIVE, or CHECKPOINTER=sql with SQLDB_DSN: PostgreSQL, as on Node,
 *   through connections of each request's own (./postgres.ts);
 * - else the Durable Objects of wrangler.toml (AGENT_STORE, THREAD_LEASES): every table in the
 *   store object's SQLite, a lease object per thread; shared by every isolate;
 * - else, bindings missing: isolate memory, which a deployed worker loses between isolates and
 *   cannot share with a second one. Warned once.
 */
import { systemClock } from "../../clock.js";
import { createLogger } from "../../observability/logger.js";
import { parseSettings } from "../../settings/parse.js";
import { createDurableLease, createDurableStore } from "../../store/durable/adapter.js";
import type { Store, ThreadLease } from "../../store/ports.js";
import { durableBindings, durableObjects } from "./bindings.js";
import { workerPostgres } from "./postgres.js";

export interface WorkerStorage {
  /** Settings the bindings add (a Hyperdrive binding's CHECKPOINTER and SQLDB_DSN). */
  readonly vars: Readonly<Record<string, string>>;
  readonly store?: Store;
  readonly lease?: ThreadLease;
  /** What /health names as the checkpointer: `durable-object` on the Durable Objects. */
  readonly checkpointer?: string;
  /** Runs one request or cron event in the storage's scope (PostgreSQL: its own connections). */
  scoped<T>(work: () => T): T;
}

const unscoped = <T>(work: () => T): T => work();

/** The connection string of a Hyperdrive binding, if the worker has one. */
function hyperdrive(env: Readonly<Record<string, unknown>>): string | undefined {
  const binding = env.HYPERDRIVE as { connectionString?: unknown } | undefined;
  return typeof binding?.connectionString === "string" ? binding.connectionString : undefined;
}

export function workerStorage(env: Readonly<Record<string, unknown>>, given: Readonly<Record<string, string>>): WorkerStorage {
  const dsn = hyperdrive(env);
  const vars = dsn ? { ...given, CHECKPOINTER: "sql", SQLDB_DSN: dsn } : given;
  if (vars.CHECKPOINTER === "sql") {
    let settings;
    try {
      settings = parseSettings(vars);
    } catch {
      return { vars, scoped: unscoped }; // createApp reports the bad settings
    }
    const logger = createLogger({ level: settings.LOG_LEVEL, format: settings.logFormat, write: (line) => console.log(line) });
    const pg = workerPostgres({ dsn: settings.SQLDB_DSN!, max: settings.DB_POOL_MAX_SIZE, logger });
    return { vars, store: pg.store, lease: pg.lease, scoped: pg.scoped };
  }
  const bindings = durableBindings(env);
  if (!bindings) {
    createLogger({ level: "WARNING", format: "json", write: (line) => console.log(line) }).warning(
      "no AGENT_STORE and THREAD_LEASES Durable Object bindings: threads and leases live in this isolate's memory",
    );
    return { vars, scoped: unscoped };
  }
  const objects = durableObjects(bindings);
  return { vars, store: createDurableStore(objects, systemClock), lease: createDurableLease(objects), checkpointer: "durable-object", scoped: unscoped };
}
