import type { Context } from "hono";
import type { ErrorCode } from "../../errors.js";
import { isRefusal, storeBusy } from "../../errors.js";
import type { Ids } from "../../ids.js";
import { isHttpError } from "../../problems.js";
import { errorDetail } from "../../observability/redact.js";
import type { HttpEnv } from "../env.js";

/** The one table from the domain's refusal codes to HTTP statuses (spec 7.1). */
const STATUS: Partial<Record<ErrorCode, 403 | 404 | 409 | 410>> = {
  forbidden: 403,
  thread_foreign: 403,
  not_an_approver: 403,
  approval_direct_only: 403,
  not_found: 404,
  approval_not_found: 404,
  thread_busy: 409,
  approval_pending: 409,
  approval_not_pending: 409,
  approval_digest_mismatch: 409,
  approval_expired: 410,
};

/** Codes the body names besides its detail (403 and 404 bodies are `{detail}` alone). */
const PLAIN = new Set<ErrorCode>(["forbidden", "thread_foreign", "not_found"]);

/**
 * The one mapping from errors to responses. Refusals of the domain carry a code, mapped by the
 * table above; HttpErrors (authentication, body limits, validation) carry their answer; a
 * database that cannot answer, or a lost lease, is a 503 with a reference; anything else is a
 * 500 whose body names only a reference, with the error's type, message and cause logged under it
 * (secrets masked; the stack only under dev).
 */
export function errorHandler({ ids, dev }: { ids: Ids; dev: boolean }) {
  return function onError(error: Error, c: Context<HttpEnv>): Response {
    if (isRefusal(error)) {
      const status = STATUS[error.code] ?? 409;
      return c.json(PLAIN.has(error.code) ? { detail: error.message } : { code: error.code, detail: error.message, ...error.details }, status);
    }
    if (isHttpError(error)) {
      // Every 503 names a reference an operator can find in the log (spec 7.1), whoever threw it.
      if (error.status === 503 && error.body.error_id === undefined) {
        const errorId = ids.errorId();
        c.get("logger")?.warning("request refused: service unavailable", { error_id: errorId, error_type: error.name });
        return c.json({ ...error.body, error_id: errorId }, 503, error.headers);
      }
      return c.json(error.body, error.status as 400, error.headers);
    }
    const code = (error as { code?: string }).code;
    if (code === "unavailable" || code === "lease_lost") {
      const errorId = ids.errorId();
      c.get("logger")?.warning("request failed: storage unavailable", { error_id: errorId, error_code: code });
      const why = storeBusy(error) ? "database busy; nothing was done, try again" : "database unreachable";
      return c.json({ detail: `The service is unavailable (${why}). Reference: ${errorId}.`, error_id: errorId }, 503);
    }
    const errorId = ids.errorId();
    c.get("logger")?.error("unhandled error", {
      error_id: errorId,
      error_type: error.name,
      ...errorDetail(error),
      ...(dev ? { stack: error.stack } : {}),
    });
    return c.json({ detail: `Internal server error. Reference: ${errorId}.`, error_id: errorId }, 500);
  };
}

export function notFoundHandler(c: Context<HttpEnv>): Response {
  return c.json({ detail: "Not found." }, 404);
}
