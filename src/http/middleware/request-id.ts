import type { MiddlewareHandler } from "hono";
import type { Ids } from "../../ids.js";
import type { Logger } from "../../observability/logger.js";
import type { HttpEnv } from "../env.js";

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A request's id: the X-Request-ID the caller sent when it is valid, else a new one. */
export function chooseRequestId(sent: string | null | undefined, ids: Ids): string {
  return sent !== undefined && sent !== null && VALID.test(sent) ? sent : ids.requestId();
}

/** Echoes a valid caller-sent X-Request-ID, else generates one; every response carries it. */
export function requestId({ ids, logger }: { ids: Ids; logger: Logger }): MiddlewareHandler<HttpEnv> {
  return async function requestIdMiddleware(c, next) {
    const id = chooseRequestId(c.req.header("x-request-id"), ids);
    c.set("requestId", id);
    c.set("logger", logger.child({ request_id: id }));
    await next();
    c.res.headers.set("X-Request-ID", id);
  };
}
