/**
 * The graph server's auth handler (`auth.path` in langgraph.json), built from our one auth
 * policy (spec 4.6, 5.5). The server calls `authenticate` for every request, ours included, and
 * then one handler per native action; an action with no handler would be allowed, so a deny-all
 * default is registered first and each allowed action gets its own rule:
 *
 * - threads: the caller's own (owner and, for a delegated caller, actor in the thread's metadata,
 *   which the caller cannot set); a copy of a thread with approvals is refused;
 * - runs: on the caller's threads, with the run context (`context`, `config.configurable`)
 *   replaced by the caller's id, roles and public attributes (`@actor` included, credentials
 *   never); refused (403) on a thread with a pending approval, and a resume, a replay from a
 *   checkpoint or a run without input refused on a thread that has approvals; no webhooks (the
 *   server would post to any URL the caller names);
 * - assistants, crons and store: reads for any authenticated principal, writes only for
 *   AUTH_ADMIN_ROLES held by a caller acting directly.
 *
 * `disable_studio_auth` is set in langgraph.json: otherwise the header `x-auth-scheme: langsmith`
 * skips this handler altogether.
 */
import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";
import { applyDelegationRules } from "../../auth/delegation.js";
import { type Principal, publicPrincipal } from "../../auth/principal.js";
import type { JsonValue } from "../../json.js";
import { chooseRequestId } from "../../http/middleware/request-id.js";
import type { Ids } from "../../ids.js";
import { type HttpError, isHttpError } from "../../problems.js";
import { currentHost, type GraphServerHost } from "./host.js";
import { isOwnRoute } from "./routes.js";
import { RESERVED_METADATA } from "./server-threads.js";

/** What the server keeps as the caller (and copies into every run's configuration): no credentials. */
export interface CallerUser {
  readonly identity: string;
  readonly display_name: string;
  readonly permissions: string[];
  readonly is_authenticated: true;
  readonly kind: "agent-principal";
  /** The hashed principal id: the owner key of threads. */
  readonly owner: string;
  readonly actor: string | null;
  /** The caller as tools see it (ctx.principal). */
  readonly principal: { id: string; roles: string[]; attributes: Record<string, JsonValue>; actor: Principal["actor"] };
  readonly admin: boolean;
}

/** Requests to our own routes: authenticated by our app, never by native handlers (all deny it). */
const OWN_ROUTE_USER = { identity: "agent-service:own-route", kind: "own-route", permissions: [] as string[], is_authenticated: false };

const FORBIDDEN = (message: string) => new HTTPException(403, { message });

async function authenticate(request: Request): Promise<CallerUser | typeof OWN_ROUTE_USER> {
  if (isOwnRoute(request)) return OWN_ROUTE_USER;
  const host = await currentHost();
  const { settings, auth, hashPrincipal } = host.parts;
  try {
    const principal = applyDelegationRules(await auth.authenticate(forwarded(request, settings)), settings);
    const owner = await hashPrincipal(principal.id);
    const shown = publicPrincipal(principal);
    return {
      identity: owner,
      display_name: owner,
      permissions: [],
      is_authenticated: true,
      kind: "agent-principal",
      owner,
      actor: principal.actor?.id ?? null,
      principal: { id: shown.id, roles: [...shown.roles], attributes: { ...shown.attributes }, actor: shown.actor },
      // A delegated principal's roles never administer (spec 5.6).
      admin: principal.actor === null && principal.roles.some((r) => settings.AUTH_ADMIN_ROLES.includes(r)),
    };
  } catch (error) {
    if (isHttpError(error)) throw refusal(request, error, host.parts.ids);
    throw error;
  }
}

/**
 * The server answers a refused request with the exception's message as the body and its headers:
 * so the message is our JSON problem body (spec 7.1: `{detail}`), sent with its headers
 * (WWW-Authenticate) and the request id, as our own routes answer.
 */
function refusal(request: Request, error: HttpError, ids: Ids): HTTPException {
  const headers = { ...error.headers, "content-type": "application/json", "x-request-id": chooseRequestId(request.headers.get("x-request-id"), ids) };
  return new HTTPException(error.status, { message: JSON.stringify(error.body), headers });
}

/**
 * With GRAPHSERVER_URL set the handler sees only the headers AUTH_FORWARD_HEADERS lists (spec
 * 5.4), as behind a server that forwards them; an empty list forwards nothing.
 */
function forwarded(request: Request, settings: GraphServerHost["parts"]["settings"]): Request {
  if (!settings.GRAPHSERVER_URL) return request;
  const names = settings.AUTH_FORWARD_HEADERS.split(",").map((n) => n.trim().toLowerCase()).filter(Boolean);
  const headers = new Headers();
  for (const name of names) {
    const value = request.headers.get(name);
    if (value !== null) headers.set(name, value);
  }
  return new Request(request.url, { method: request.method, headers });
}

const callerOf = (user: unknown): CallerUser | undefined => ((user as { kind?: unknown })?.kind === "agent-principal" ? (user as CallerUser) : undefined);

/** The threads a caller may reach: its own; a delegated caller only those its agent started. */
const ownFilter = (c: CallerUser): Record<string, string> => (c.actor !== null ? { owner: c.owner, actor: c.actor } : { owner: c.owner });

type Metadata = Record<string, unknown>;

/** Our metadata, set from the caller whatever the request said. */
function stamp(value: { metadata?: Metadata | null | undefined }, c: CallerUser): void {
  const metadata: Metadata = { ...(value.metadata ?? {}) };
  for (const key of RESERVED_METADATA) delete metadata[key];
  value.metadata = { ...metadata, owner: c.owner, ...(c.actor !== null ? { actor: c.actor } : {}) };
}

/** What stands on a thread: approvals at all, and pending ones. */
async function approvalsOn(threadId: string): Promise<{ any: boolean; pending: boolean }> {
  const { store } = (await currentHost()).parts.runs;
  const [any, blockers] = await Promise.all([store.listApprovals({ thread_id: threadId, limit: 1, offset: 0 }), store.threadBlockers(threadId)]);
  return { any: any.length > 0, pending: blockers.pending.length > 0 || blockers.due !== null };
}

interface RunValue {
  thread_id?: string | undefined;
  metadata?: Metadata | null;
  kwargs: {
    input?: unknown;
    command?: unknown;
    webhook?: unknown;
    context?: unknown;
    config?: { configurable?: Record<string, unknown> } & Record<string, unknown>;
  };
}

const CHECKPOINT_KEYS = new Set(["checkpoint_id", "checkpoint_ns", "checkpoint_map"]);

const adminOnly = ({ user }: { user: unknown }) => callerOf(user)?.admin === true;
const anyCaller = ({ user }: { user: unknown }) => callerOf(user) !== undefined;

export const auth = new Auth()
  .authenticate(authenticate)
  // Deny-all first: an action no rule below names is refused (the server would allow it).
  .on("*", () => false)
  .on("threads:create", async ({ user, value }): Promise<Record<string, string>> => {
    const c = callerOf(user);
    if (!c) throw FORBIDDEN("Not permitted.");
    const v = value as { thread_id?: string; metadata?: Metadata | null };
    // A copy carries the original's metadata: a thread with approvals is not copied (spec 5.5).
    const origin = v.metadata?.agent_thread;
    if (typeof origin === "string" && origin !== v.thread_id && (await approvalsOn(origin)).any) throw FORBIDDEN("A thread with approvals is not copied.");
    stamp(v, c);
    if (v.thread_id) (v.metadata as Metadata).agent_thread = v.thread_id;
    return ownFilter(c);
  })
  .on(["threads:read", "threads:search", "threads:delete"], ({ user }) => {
    const c = callerOf(user);
    return c ? ownFilter(c) : false;
  })
  .on("threads:update", async ({ user, value }): Promise<Record<string, string>> => {
    const c = callerOf(user);
    if (!c) throw FORBIDDEN("Not permitted.");
    const v = value as { thread_id?: string; metadata?: Metadata | null };
    // A state written natively could stand in for a gated call's result.
    if (v.thread_id && (await approvalsOn(v.thread_id)).any) throw FORBIDDEN("A thread with approvals is not updated through the native API.");
    if (v.metadata) for (const key of RESERVED_METADATA) delete v.metadata[key];
    return ownFilter(c);
  })
  .on("threads:create_run", async ({ user, value }): Promise<Record<string, string>> => {
    const c = callerOf(user);
    if (!c) throw FORBIDDEN("Not permitted.");
    const v = value as unknown as RunValue;
    if (v.kwargs.webhook !== undefined && v.kwargs.webhook !== null) throw FORBIDDEN("Webhooks are not allowed.");
    if (v.thread_id) {
      const on = await approvalsOn(v.thread_id);
      if (on.pending) throw FORBIDDEN("Native run refused: the thread waits for an approval decision.");
      const configurable = v.kwargs.config?.configurable ?? {};
      const replay = Object.keys(configurable).some((k) => CHECKPOINT_KEYS.has(k));
      const resume = v.kwargs.command !== undefined && v.kwargs.command !== null;
      const noInput = v.kwargs.input === undefined || v.kwargs.input === null;
      if (on.any && (replay || resume || noInput)) throw FORBIDDEN("Native run refused: resume, replay and runs without input are refused on a thread with approvals.");
    }
    stamp(v, c);
    // The run context is the caller's, whatever the request sent.
    const context = { user_id: c.principal.id, roles: c.principal.roles, attributes: c.principal.attributes };
    v.kwargs.context = context;
    // Where to start from is not context: a replay's checkpoint stays (refused above where it must be).
    const from = Object.fromEntries(Object.entries(v.kwargs.config?.configurable ?? {}).filter(([k]) => CHECKPOINT_KEYS.has(k)));
    v.kwargs.config = { ...(v.kwargs.config ?? {}), configurable: { ...from, ...context, agent_principal: c.principal, langgraph_auth_user: c, langgraph_auth_user_id: c.identity } };
    return ownFilter(c);
  })
  .on(["assistants:read", "assistants:search", "crons:read", "crons:search", "store:get", "store:search", "store:list_namespaces"], anyCaller)
  .on(["assistants:create", "assistants:update", "assistants:delete", "crons:create", "crons:update", "crons:delete", "store:put", "store:delete"], adminOnly);

export default auth;
