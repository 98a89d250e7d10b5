/// <reference types="node" />
/**
 * PostgreSQL on workerd (CHECKPOINTER=sql): the Postgres adapters of Node, over the `postgres`
 * package's workerd build, which connects through `cloudflare:sockets` and needs `nodejs_compat`.
 * The DSN is a Hyperdrive binding's connection string (or SQLDB_DSN, connecting straight to the
 * database).
 *
 * Why a pool per request: workerd refuses a socket opened by one request to every other request
 * ("Cannot perform I/O on behalf of a different request"), so the one pool openPostgres keeps for
 * a process cannot serve an isolate. Each request (and each cron event) gets connections of its
 * own, opened on its first query and closed by workerd when it ends; the store and lease handed
 * to createApp find them through AsyncLocalStorage. Under Hyperdrive, which pools the connections
 * to the database, that costs a hop to Hyperdrive, not a handshake with the database. It also
 * keeps postgres/batch.ts's write batching inside one request, so no request's statement ever
 * answers another's calls. What an isolate shares is free of I/O: the health guard (a flag and
 * per-call timers) and whether the schema was made (each request makes sure of it until one has).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { AppError } from "../../errors.js";
import type { Logger } from "../../observability/logger.js";
import type { Store, ThreadLease } from "../../store/ports.js";
import { connect, migrate } from "../../store/postgres/connect.js";
import { createGuard, type Guard } from "../../store/postgres/health.js";
import { postgresAdapters, type PostgresAdapters } from "../../store/postgres/index.js";

/** workerd lets a request hold six connections open at once; the rest wait for these. */
const CONNECTIONS_PER_REQUEST = 3;

export interface WorkerPostgres {
  readonly store: Store;
  readonly lease: ThreadLease;
  /** Runs `work` (one request, one cron event) with connections of its own, opened on its first query. */
  scoped<T>(work: () => T): T;
}

export function workerPostgres(options: { dsn: string; max: number; schema?: string; logger: Logger; onHealth?: (up: boolean) => void }): WorkerPostgres {
  const scopes = new AsyncLocalStorage<{ adapters?: PostgresAdapters }>();
  const health = createGuard(options.logger, options.onHealth ?? (() => {}));
  let migrated = false;

  const current = (): PostgresAdapters => {
    const scope = scopes.getStore();
    if (!scope) throw new AppError("unavailable", "PostgreSQL was used outside a request.");
    if (!scope.adapters) {
      const sql = connect({ dsn: options.dsn, min: 0, max: Math.min(options.max, CONNECTIONS_PER_REQUEST), logger: options.logger, ...(options.schema ? { schema: options.schema } : {}) });
      const guard: Guard = (work) =>
        health(async () => {
          if (!migrated) {
            await migrate(sql, options.schema);
            migrated = true;
          }
          return work();
        });
      scope.adapters = postgresAdapters(sql, guard, options.logger);
    }
    return scope.adapters;
  };

  /** A port whose every method is the current scope's; closing is workerd's, at the end of each request. */
  const forward = <T extends object>(part: (adapters: PostgresAdapters) => T): T =>
    new Proxy({} as T, {
      get(_, name) {
        if (name === "then") return undefined;
        if (name === "close") return async () => {};
        return (...args: unknown[]) => (part(current()) as Record<PropertyKey, (...a: unknown[]) => unknown>)[name]!(...args);
      },
    });

  return {
    store: forward((a) => a.store),
    lease: forward((a) => a.lease),
    scoped: (work) => scopes.run({}, work),
  };
}
