/// <reference types="node" />
/**
 * The Node entry (`npm start`, `npm run dev`): reads the env file below the process
 * environment, serves createApp's handler with @hono/node-server, and on SIGTERM/SIGINT stops
 * accepting connections, lets runs finish (DRAIN_GRACE_S, default 25 s), then exits.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { randomBytes } from "node:crypto";
import { serve } from "@hono/node-server";
import { createApp } from "../app.js";
import type { Tool } from "../agent/tools/define.js";
import type { CustomAuthPolicy } from "../auth/custom.js";
import { isAppError, type SettingsError } from "../errors.js";
import { createLogger } from "../observability/logger.js";
import type { PolicyError } from "../policy/document.js";
import { layerEnv, parseEnvFile } from "../settings/env-file.js";
import { hostReadText } from "./files.js";
import { nodeOutboundFetch } from "./outbound.js";

const DEV_DEFAULTS = { APP_ENV: "dev", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", CHECKPOINTER: "memory" };

export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const dev = argv.includes("--dev");
  const envFile = process.env.ENV_FILE ?? ".env";
  let fileEnv: Record<string, string> = {};
  try {
    fileEnv = parseEnvFile(readFileSync(resolve(envFile), "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      process.stderr.write(`Cannot read ${envFile}: ${(error as Error).message}\n`);
      process.exit(2);
    }
  }
  const env = layerEnv(dev ? DEV_DEFAULTS : {}, fileEnv, process.env);
  let playgroundKey: string | undefined;
  if (dev && !env.API_KEY) {
    playgroundKey = `dev-${randomBytes(16).toString("hex")}`;
    env.API_KEY = playgroundKey;
  }

  // AUTH_CUSTOM_MODULE: an ES module whose default (or `policy`) export is the custom auth policy.
  let authPolicy: CustomAuthPolicy | undefined;
  if (env.AUTH_CUSTOM_MODULE) {
    const mod = (await import(pathToFileURL(resolve(env.AUTH_CUSTOM_MODULE)).href)) as { default?: CustomAuthPolicy; policy?: CustomAuthPolicy };
    authPolicy = mod.default ?? mod.policy;
    if (!authPolicy || typeof authPolicy.authenticate !== "function") {
      process.stderr.write("AUTH_CUSTOM_MODULE must export (default or `policy`) an object with authenticate(request).\n");
      process.exit(2);
    }
  }

  const tools = env.TOOLS_MODULE ? await loadTools(env.TOOLS_MODULE) : undefined;

  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    app = await createApp({
      ...(authPolicy ? { authPolicy } : {}),
      ...(tools ? { tools } : {}),
      env,
      readText: hostReadText(process.cwd()),
      fetch: nodeOutboundFetch(),
      playgroundKey,
      logWrite: (line) => void process.stdout.write(`${line}\n`),
    });
  } catch (error) {
    if (isAppError(error) && error.code === "invalid_settings") {
      process.stderr.write("The service cannot start: invalid settings.\n");
      for (const p of (error as SettingsError).problems) process.stderr.write(`  ${p.variable}: ${p.message}\n`);
      process.exit(2);
    }
    if (isAppError(error) && error.code === "configuration") {
      process.stderr.write(`The service cannot start: ${error.message}\n`);
      process.exit(2);
    }
    if (isAppError(error) && error.code === "invalid_policy") {
      process.stderr.write("The service cannot start: the API policy has problems.\n");
      for (const p of (error as PolicyError).problems) process.stderr.write(`  ${p.place}: ${p.message}\n`);
      process.exit(3);
    }
    throw error;
  }

  const { HOST: hostname, PORT: port } = app.settings;
  // The entry's own lines follow the service's log format: one JSON object per line outside dev.
  const log = createLogger({ level: app.settings.LOG_LEVEL, format: app.settings.logFormat, write: (line) => void process.stdout.write(`${line}\n`), name: "runtime" });
  const server = serve({ fetch: app.fetch, hostname, port }, (info) => {
    const base = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${info.port}`;
    if (!app.settings.dev) return log.info(`Agent service listening on ${base}`);
    process.stdout.write(`Agent service listening on ${base}\n`);
    process.stdout.write(`  playground: ${base}/playground   docs: ${base}/docs\n`);
    if (playgroundKey) process.stdout.write(`  development API key: ${playgroundKey}\n`);
  });
  server.once("error", (error: NodeJS.ErrnoException) => {
    const reason = error.code === "EADDRINUSE" ? "is in use" : error.code === "EACCES" ? "needs privileges this process lacks" : `cannot be listened on (${error.code ?? "error"})`;
    process.stderr.write(`The service cannot start: PORT ${port} on HOST ${hostname} ${reason}.\n`);
    process.exit(2);
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining ${app.activeRuns} run(s)`);
    // Stop accepting; open streams keep their sockets until their runs end.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await app.drain(app.settings.DRAIN_GRACE_S * 1000);
    await app.close();
    // Let the last bytes of drained streams reach their sockets, within a bound.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/**
 * TOOLS_MODULE (CONTRACT 7): an ES module whose default export, or export `tools`, is an array
 * of defineTool tools. One that does not load, or exports something else, stops startup naming
 * the variable (exit 3, a configuration problem); the module's own error is not printed, since
 * it may quote the module's source.
 */
async function loadTools(path: string): Promise<Tool[]> {
  const stop = (why: string): never => {
    process.stderr.write(`The service cannot start: TOOLS_MODULE ${why}.\n`);
    process.exit(3);
  };
  let mod: { default?: unknown; tools?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(path)).href)) as typeof mod;
  } catch (error) {
    return stop(`does not load (${error instanceof Error ? error.name : "error"}${(error as { code?: string }).code ? ` ${(error as { code?: string }).code}` : ""})`);
  }
  const tools = mod.default ?? mod.tools;
  const isTool = (t: unknown) =>
    typeof t === "object" && t !== null && typeof (t as Tool).name === "string" && typeof (t as Tool).run === "function" && typeof (t as Tool).check === "function";
  if (!Array.isArray(tools) || tools.length === 0 || !tools.every(isTool))
    return stop("must export (default or `tools`) a non-empty array of tools made with defineTool");
  return tools as Tool[];
}

await main();
