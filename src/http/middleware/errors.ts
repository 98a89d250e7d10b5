import type { Context } from "hono";
import type { Ids } from "../../ids.js";
import { isHttpError } from "../../problems.js";
import type { HttpEnv } from "../env.js";

/**
 * The one mapping from errors to responses. HttpErrors carry their answer; anything else is a
 * 500 whose body names only a reference, with the error type logged under it (the message of an
 * unexpected error can hold request data, so it is logged only under dev).
 */
export function errorHandler({ ids, dev }: { ids: Ids; dev: boolean }) {
  return function onError(error: Error, c: Context<HttpEnv>): Response {
    if (isHttpError(error)) return c.json(error.body, error.status as 400, error.headers);
    if ((error as { code?: string }).code === "unavailable") {
      const errorId = ids.errorId();
      c.get("logger")?.warning("request failed: storage unavailable", { error_id: errorId });
      return c.json({ detail: `The service is unavailable (database unreachable). Reference: ${errorId}.`, error_id: errorId }, 503);
    }
    const errorId = ids.errorId();
    c.get("logger")?.error("unhandled error", {
      error_id: errorId,
      error_type: error.name,
      ...(dev ? { detail: error.message, stack: error.stack } : {}),
    });
    return c.json({ detail: `Internal server error. Reference: ${errorId}.`, error_id: errorId }, 500);
  };
}

export function notFoundHandler(c: Context<HttpEnv>): Response {
  return c.json({ detail: "Not found." }, 404);
}
