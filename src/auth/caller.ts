/** The authenticated caller of one request and the ownership rules every route applies (spec 5.6). */
import type { ThreadRow } from "../store/ports.js";
import type { Principal } from "./principal.js";

export interface Caller {
  readonly principal: Principal;
  /** Hashed principal id: the owner key of threads and the id in logs and run records. */
  readonly hash: string;
  /** Holds a read-across role and calls directly (a delegated principal never reads across). */
  readonly readAcross: boolean;
}

export function makeCaller(principal: Principal, hash: string, readAcrossRoles: readonly string[]): Caller {
  const readAcross = principal.actor === null && principal.roles.some((r) => readAcrossRoles.includes(r));
  return { principal, hash, readAcross };
}

/**
 * The subject owns the thread; a delegated caller owns only what its own agent started for
 * that subject, while the user calling directly owns everything done for them.
 */
export function ownsThread(caller: Caller, row: ThreadRow): boolean {
  if (row.owner !== caller.hash) return false;
  const actor = caller.principal.actor;
  return actor === null || row.actor === actor.id;
}

export function canReadThread(caller: Caller, row: ThreadRow): boolean {
  return ownsThread(caller, row) || caller.readAcross;
}
