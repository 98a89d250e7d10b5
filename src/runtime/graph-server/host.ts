/// <reference types="node" />
/**
 * The one composed app behind the graph server. The server loads our graph, auth handler and
 * HTTP app as three modules of its own choosing (langgraph.json), possibly as other copies of our
 * modules than the ones that composed the app (a test imports the built entry, `langgraphjs dev`
 * loads files through its own loader): they meet here, on a global keyed by a registered symbol,
 * never through module state. Whoever starts the server publishes the host first (start.ts, the
 * Node entry); under `langgraphjs dev` nobody does, and the first module that asks composes the
 * app from the process environment.
 */
import { getAssistantId } from "@langchain/langgraph-api/graph";
import { type App, type AppParts, type CreateAppOptions, createApp } from "../../app.js";
import { createMemoryLease } from "../../store/memory/lease.js";
import { createMemoryStore } from "../../store/memory/store.js";
import { hostReadText } from "../files.js";
import { GRAPH_ID, type ServerThreads, serverThreads } from "./server-threads.js";
import { graphServerStore } from "./store.js";

export interface GraphServerHost {
  /** The composed app's handler: our routes. */
  readonly fetch: App["fetch"];
  readonly parts: AppParts;
  readonly threads: ServerThreads;
}

/** Our own tables in the server's Postgres live under this schema, beside the server's tables. */
export const OWN_SCHEMA = "agent_service";

const KEY = Symbol.for("agent-service.graph-server.host");
type Slot = { [KEY]?: Promise<GraphServerHost> };

/** What createApp takes to compose for the graph server, and the host it hands over (once composed). */
export function graphServerParts(schema = OWN_SCHEMA): { options: Pick<CreateAppOptions, "storage" | "onParts">; host: (fetch: App["fetch"]) => GraphServerHost } {
  const threads = serverThreads(() => getAssistantId(GRAPH_ID));
  let parts: AppParts | undefined;
  return {
    options: {
      storage: graphServerStorage(threads, schema),
      onParts: (given) => {
        parts = given;
      },
    },
    host: (fetch) => {
      if (!parts) throw new Error("createApp did not hand over its parts");
      return { fetch, parts, threads };
    },
  };
}

/** Composes the app for the graph server (RUNTIME is graph-server whatever the environment says). */
export async function composeHost(options: CreateAppOptions & { readonly schema?: string }): Promise<{ app: App; host: GraphServerHost }> {
  const { options: extra, host } = graphServerParts(options.schema);
  const app = await createApp({ ...options, env: { ...options.env, RUNTIME: "graph-server" }, ...extra });
  return { app, host: host((request, env, ctx) => app.fetch(request, env, ctx)) };
}

/** Memory, or DATABASE_URI: the server's Postgres, our tables under a schema of their own. */
function graphServerStorage(threads: ServerThreads, schema: string): NonNullable<CreateAppOptions["storage"]> {
  return async (settings, { clock, logger, onHealth }) => {
    // /health: threads and checkpoints are the server's, whatever CHECKPOINTER says; our rows are
    // in its database or, without one, in this process's memory (lost on restart).
    if (!settings.DATABASE_URI)
      return { store: graphServerStore(createMemoryStore(), threads), lease: createMemoryLease(clock), persistence: { checkpointer: "graph-server", run_store: "memory" } };
    // Loaded lazily, as createApp loads it for CHECKPOINTER=sql.
    const { openPostgres } = await import("../../store/postgres/index.js");
    const pg = await openPostgres({ dsn: settings.DATABASE_URI, min: settings.DB_POOL_MIN_SIZE, max: settings.DB_POOL_MAX_SIZE, schema, logger, onHealth });
    return { store: graphServerStore(pg.store, threads), lease: pg.lease, persistence: { checkpointer: "graph-server", run_store: "sql" } };
  };
}

export function publishHost(host: Promise<GraphServerHost>): void {
  (globalThis as Slot)[KEY] = host;
}

export function clearHost(): void {
  delete (globalThis as Slot)[KEY];
}

/** The published host, else (`langgraphjs dev`) one composed from the process environment. */
export function currentHost(): Promise<GraphServerHost> {
  const slot = globalThis as Slot;
  slot[KEY] ??= composeHost({ env: process.env, readText: hostReadText(process.cwd()) }).then(({ host }) => host);
  return slot[KEY];
}
