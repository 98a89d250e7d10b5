/// <reference types="node" />
/**
 * Starting the LangGraph.js Agent Server in this process (`startServer()`) with our graph, auth
 * handler and routes from scripts/graph-server/langgraph.json. The server keeps its local state
 * (`.langgraph_api/`) under the directory it is given as its working directory: always a data
 * directory of its own (GRAPHSERVER_DATA_DIR, else one under the system's temp directory), never
 * the project's tree. The graph paths are made absolute against langgraph.json's own directory.
 *
 * Loaded only under RUNTIME=graph-server (the Node entry imports it lazily), so nothing of
 * LangChain enters the other entries or the worker bundle.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { StartServerOptions } from "@langchain/langgraph-api/server";
import type { App, CreateAppOptions } from "../../app.js";
import { clearHost, composeHost, type GraphServerHost, graphServerParts, publishHost } from "./host.js";

const CONFIG = join("scripts", "graph-server", "langgraph.json");

interface LanggraphJson {
  graphs: Record<string, string>;
  auth?: { path?: string; disable_studio_auth?: boolean };
  http?: { app?: string };
}

/** The package root: the nearest directory above this module that holds langgraph.json. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, CONFIG))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`${CONFIG} was not found above ${fileURLToPath(import.meta.url)} (copy scripts/graph-server/ beside dist/)`);
    dir = up;
  }
}

/** langgraph.json with every `file:export` path made absolute. */
export function serverConfig(): Pick<StartServerOptions, "graphs" | "auth" | "http"> {
  const file = join(packageRoot(), CONFIG);
  const json = JSON.parse(readFileSync(file, "utf8")) as LanggraphJson;
  const absolute = (spec: string) => {
    const [path, symbol] = spec.split(":", 2);
    return `${resolve(dirname(file), path!)}${symbol ? `:${symbol}` : ""}`;
  };
  if (!json.auth?.path || !json.http?.app) throw new Error(`${file} must name auth.path and http.app`);
  // Without it the header `x-auth-scheme: langsmith` skips the auth handler (spec 4.6).
  if (json.auth.disable_studio_auth !== true) throw new Error(`${file} must set auth.disable_studio_auth`);
  return {
    graphs: Object.fromEntries(Object.entries(json.graphs).map(([id, spec]) => [id, absolute(spec)])),
    auth: { path: absolute(json.auth.path), disable_studio_auth: true },
    // The native API stays whole (spec 4.6): assistants, threads, runs, crons, store.
    http: { app: absolute(json.http.app), disable_assistants: false, disable_threads: false, disable_runs: false, disable_store: false, disable_meta: false },
  };
}

/** Our LOG_LEVEL names as the server's logger (winston) spells them. */
const SERVER_LEVELS: Record<string, string> = { DEBUG: "debug", INFO: "info", WARNING: "warn", ERROR: "error", CRITICAL: "error" };

/**
 * The server's logger reads LOG_LEVEL from the process environment once, when its module loads,
 * and takes only its own level names (unset: debug, a line per request). It is loaded here,
 * after our LOG_LEVEL is put in its spelling, unless the environment already holds one of its.
 */
async function loadServer(level: string): Promise<typeof import("@langchain/langgraph-api/server")> {
  const given = process.env.LOG_LEVEL;
  if (!given || !Object.values(SERVER_LEVELS).includes(given)) process.env.LOG_LEVEL = SERVER_LEVELS[level] ?? "info";
  return import("@langchain/langgraph-api/server");
}

export function defaultDataDir(): string {
  return process.env.GRAPHSERVER_DATA_DIR || join(tmpdir(), "agent-service-graph-server");
}

export interface ServedGraphServer {
  /** `http://host:port` */
  readonly url: string;
  readonly port: number;
  /** Stops accepting and flushes the server's state to its data directory. */
  stop(): Promise<void>;
}

/**
 * Starts the server for an already composed host: our routes and the native API on one port.
 * The first request to our routes hands the server's storage to our thread store; one is sent
 * here at once, so the service is ready when this resolves.
 */
export async function serveGraphServer(host: GraphServerHost, options: { hostname: string; port: number; dataDir: string; workers?: number }): Promise<ServedGraphServer> {
  mkdirSync(options.dataDir, { recursive: true });
  publishHost(Promise.resolve(host));
  const config = serverConfig();
  // The server answers every origin unless told otherwise: it follows CORS_ALLOWED_ORIGINS too.
  const origins = host.parts.settings.CORS_ALLOWED_ORIGINS;
  const cors = origins.includes("*") ? undefined : { allow_origins: [...origins] };
  const { startServer } = await loadServer(host.parts.settings.LOG_LEVEL);
  const { host: address, cleanup } = await startServer({
    ...config,
    http: { ...config.http!, ...(cors ? { cors } : {}) },
    host: options.hostname,
    port: options.port,
    nWorkers: options.workers ?? 2,
    cwd: options.dataDir,
  });
  const port = Number(address.slice(address.lastIndexOf(":") + 1));
  const name = options.hostname.includes(":") ? `[${options.hostname}]` : options.hostname;
  const url = `http://${name === "0.0.0.0" ? "127.0.0.1" : name}:${port}`;
  await fetch(`${url}/health`).then((r) => r.body?.cancel());
  return {
    url,
    port,
    async stop() {
      await cleanup();
      clearHost();
    },
  };
}

export interface GraphServer extends ServedGraphServer {
  readonly app: App;
  /** Drains runs, stops the server and closes the app. */
  close(): Promise<void>;
}

/**
 * Composes the app and starts the server (tests, embedding): `startServer()` in process. The
 * server listens on `hostname`/`port` (port 0: any free one), not the settings' HOST/PORT, so
 * without APP_URL the A2A card names the origin each request came to.
 */
export async function startGraphServer(
  options: CreateAppOptions & { readonly hostname?: string; readonly port?: number; readonly dataDir: string; readonly schema?: string },
): Promise<GraphServer> {
  const { hostname = "127.0.0.1", port = 0, dataDir, ...appOptions } = options;
  const { app, host } = await composeHost({ cardFollowsRequest: true, ...appOptions });
  const served = await serveGraphServer(host, { hostname, port, dataDir });
  return {
    ...served,
    app,
    async close() {
      await app.drain(0);
      await served.stop();
      await app.close();
    },
  };
}

/**
 * The Node entry under RUNTIME=graph-server (process-entry.ts's `select`): createApp gets the
 * server's storage, and the server, not @hono/node-server, listens on HOST/PORT with our routes
 * and the native API. Its data directory is GRAPHSERVER_DATA_DIR, else one under the temp dir.
 */
export function graphServerEntry(): { app: Pick<CreateAppOptions, "storage" | "onParts">; listen: (options: { fetch: App["fetch"]; hostname: string; port: number }) => Promise<{ port: number; stop(): Promise<void> }> } {
  // Read now, so a missing or broken langgraph.json stops startup before the app is composed.
  serverConfig();
  const { options, host } = graphServerParts();
  return {
    app: options,
    async listen({ fetch, hostname, port }) {
      const served = await serveGraphServer(host(fetch), { hostname, port, dataDir: defaultDataDir() });
      return { port: served.port, stop: () => served.stop() };
    },
  };
}
