import type { Context, MiddlewareHandler } from "hono";
import { forbidden } from "../../problems.js";
import type { HttpEnv } from "../env.js";

const ALLOW_HEADERS = "Authorization, Content-Type, Accept, X-Request-ID, A2A-Version";
const ALLOW_METHODS = "GET, POST, DELETE, OPTIONS";

/** Same-origin requests (the dev pages) and listed origins; `*` lists every origin. */
export function originAllowed(c: Context<HttpEnv>, allowed: readonly string[]): boolean {
  const origin = c.req.header("origin");
  if (origin === undefined) return true;
  if (allowed.includes("*") || allowed.includes(origin)) return true;
  return origin === new URL(c.req.url).origin;
}

/**
 * CORS for the origins in CORS_ALLOWED_ORIGINS (default none, spec 4): preflights are answered
 * for listed origins only, and answers to them carry the CORS headers. A guarded request from
 * another browser origin is refused after authentication (see requireAuth).
 */
export function cors({ allowed }: { allowed: readonly string[] }): MiddlewareHandler<HttpEnv> {
  return async function corsMiddleware(c, next) {
    const origin = c.req.header("origin");
    if (origin === undefined) return next();
    const listed = allowed.includes("*") || allowed.includes(origin);
    if (c.req.method === "OPTIONS" && c.req.header("access-control-request-method")) {
      if (!listed) throw forbidden("This origin is not allowed.");
      return c.body(null, 204, {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": ALLOW_METHODS,
        "Access-Control-Allow-Headers": ALLOW_HEADERS,
        "Access-Control-Max-Age": "600",
        Vary: "Origin",
      });
    }
    await next();
    if (listed) {
      c.res.headers.set("Access-Control-Allow-Origin", origin);
      c.res.headers.set("Access-Control-Expose-Headers", "X-Request-ID");
      c.res.headers.append("Vary", "Origin");
    }
  };
}
