/**
 * The auth policy port: one policy guards every surface (spec 5). `authenticate` resolves to a
 * principal or throws an HttpError (401 with WWW-Authenticate, 503 when it cannot decide).
 */
import type { Action, Principal } from "./principal.js";

export interface AuthPolicy {
  readonly name: "shared-bearer" | "jwt" | "custom";
  authenticate(request: Request): Promise<Principal>;
  /** A custom policy may refuse an action on a resource (thread ownership is checked elsewhere). */
  authorize?(principal: Principal, action: Action, resource: { readonly thread_id?: string }): Promise<boolean> | boolean;
}

/** The credential of an `Authorization: Bearer <token>` header, `undefined` when there is none. */
export function bearerToken(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (header === null) return undefined;
  const match = /^bearer(?:\s+(.*))?$/is.exec(header.trim());
  if (!match) return undefined;
  return (match[1] ?? "").trim();
}
