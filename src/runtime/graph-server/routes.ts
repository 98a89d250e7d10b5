/**
 * Our routes as the graph server sees them: mounted ahead of its native API (app.ts) and let
 * through its auth handler unjudged (auth.ts), since our app authenticates them itself with the
 * same policy and answers with the spec's own 401 and 403 bodies. Probes are among them, so they
 * stay open. None of these collides with a native route: `DELETE /threads/:id` is ours on purpose
 * (spec 4.2: the server's deletion, then ours).
 */
import { RegExpRouter } from "hono/router/reg-exp-router";

export const OWN_ROUTES: readonly (readonly [method: string, path: string])[] = [
  ["POST", "/chat"],
  ["GET", "/threads"],
  ["GET", "/threads/:thread_id/messages"],
  ["DELETE", "/threads/:thread_id"],
  ["GET", "/threads/:thread_id/approvals"],
  ["POST", "/threads/:thread_id/approvals/:approval_id"],
  ["GET", "/approvals"],
  ["GET", "/health"],
  ["GET", "/ready"],
  ["GET", "/metrics"],
  ["GET", "/a2a/:agent/.well-known/agent-card.json"],
  ["POST", "/a2a/:agent"],
  ["GET", "/playground"],
  ["GET", "/docs"],
  ["GET", "/openapi.json"],
];

/** The native server's own probe: open like ours. */
const OPEN_NATIVE: readonly (readonly [string, string])[] = [["GET", "/ok"]];

const router = new RegExpRouter<true>();
for (const [method, path] of [...OWN_ROUTES, ...OPEN_NATIVE]) router.add(method, path, true);

/** True when the request goes to one of our routes (or the server's probe). */
export function isOwnRoute(request: Request): boolean {
  const method = request.method === "HEAD" ? "GET" : request.method;
  const [matches] = router.match(method, new URL(request.url).pathname);
  return matches.length > 0;
}
