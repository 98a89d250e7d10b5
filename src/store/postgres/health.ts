/**
 * Database health: every query runs through the guard. A connection failure marks the database
 * down (agent_database_up 0, one WARNING without traceback) and becomes DatabaseUnavailable,
 * which routes answer 503; the next query that succeeds marks it up again, without a restart.
 */
import type { Logger } from "../../observability/logger.js";
import { DatabaseUnavailable } from "./connect.js";

export type Guard = <T>(work: () => Promise<T>) => Promise<T>;

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "QUERY_TIMEOUT",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "08000",
  "08003",
  "08006",
  "08001",
  "08004",
]);

/**
 * The server cancelled the statement and rolled it back (statement or lock timeout, a deadlock):
 * nothing was done, the database is up. Answered 503 like an outage, without marking it down.
 */
const CANCELLED_CODES = new Set(["57014", "55P03", "40P01"]);

export function isCancelledStatement(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && CANCELLED_CODES.has(code);
}

/**
 * The server refused the connection itself: a login it does not accept, a role or database that
 * does not exist. The service cannot work until an operator fixes SQLDB_DSN or the server, so it
 * answers 503 like an outage, and the log says what the server said (it names the role or the
 * database, never the password).
 */
const REFUSED_LOGIN_CODES = new Set(["28P01", "28000", "3D000", "42501", "53300"]);

export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && (CONNECTION_CODES.has(code) || REFUSED_LOGIN_CODES.has(code));
}

function refusedLogin(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown };
  return typeof e.code === "string" && REFUSED_LOGIN_CODES.has(e.code) && typeof e.message === "string" ? e.message : undefined;
}

export function createGuard(logger: Logger, onHealth: (up: boolean) => void): Guard & { readonly up: boolean } {
  let up = true;
  const guard = async <T>(work: () => Promise<T>): Promise<T> => {
    // A connection that stops answering mid-query is only noticed by a deadline of our own:
    // 3 s while healthy, 2 s once the database is known down (spec 7.1). A statement that is
    // merely slow or waits on a lock is cancelled by the server first (connect.ts), so this
    // deadline only fires when the server itself stopped answering.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error("query timed out"), { code: "QUERY_TIMEOUT" })), up ? 3_000 : 2_000);
    });
    try {
      const pending = work();
      pending.catch(() => {});
      const result = await Promise.race([pending, deadline]);
      if (!up) {
        up = true;
        onHealth(true);
        logger.info("database reachable again");
      }
      return result;
    } catch (error) {
      if (isCancelledStatement(error)) {
        logger.warning("database statement cancelled", { error_code: String((error as { code?: unknown }).code) });
        throw new DatabaseUnavailable({ cause: error, busy: true });
      }
      if (!isConnectionError(error)) throw error;
      if (up) {
        up = false;
        onHealth(false);
        const refused = refusedLogin(error);
        if (refused) logger.warning("database refused the connection", { error_code: String((error as { code?: unknown }).code), reason: refused });
        else logger.warning("database unreachable", { error_code: String((error as { code?: unknown }).code) });
      }
      throw new DatabaseUnavailable({ cause: error });
    } finally {
      clearTimeout(timer);
    }
  };
  return Object.defineProperty(guard, "up", { get: () => up }) as Guard & { readonly up: boolean };
}
