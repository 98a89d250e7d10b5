/**
 * A custom auth policy for tests: the bearer token is a word naming a principal in a table.
 * Principals are the CustomPrincipal shape (missing fields get the defaults: no roles, every
 * permission, no actor).
 */
import { type Actor, AuthError, type CustomAuthPolicy, type CustomPrincipal } from "../../../src/index.js";

/** An agent acting for the principal (delegation), with no chain and no client. */
export const actor = (id: string): Actor => ({ id, chain: [], client: null });

/** Authenticates `Authorization: Bearer <word>` as `principals[word]`; any other word is a 401. */
export function bearerWordPolicy(principals: Readonly<Record<string, CustomPrincipal>>): CustomAuthPolicy {
  return {
    authenticate(request) {
      const word = request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
      const p = principals[word];
      if (!p) throw new AuthError(401, "Invalid bearer token: unknown test word.");
      return p;
    },
  };
}

/** The headers that authenticate as `word` under bearerWordPolicy. */
export const bearer = (word: string) => ({ Authorization: `Bearer ${word}` });
