/// <reference types="node" />
/**
 * What the Node, Bun and Deno entries share: the environment (the env file below the process
 * environment, `--dev` defaults), AUTH_CUSTOM_MODULE and TOOLS_MODULE, createApp with the startup
 * errors and their exit codes, the listening lines, a port in use, and the drain on SIGTERM/SIGINT
 * (stop accepting, let runs finish for DRAIN_GRACE_S, close, exit 0). An entry supplies only its
 * server (`listen`) and what it adds to createApp (its outbound fetch).
 *
 * It uses `node:` built-ins and `process` on purpose: Bun and Deno serve both, so the three
 * runtimes read files, argv, signals and exit codes through one code path and cannot drift apart.
 * Only the HTTP server differs: Bun serves with `Bun.serve`, faster there than its `node:http`
 * emulation; Node and Deno with node-serve.ts (Deno's `node:http` is a port of Node's, and served
 * more chat turns/s in less memory than `Deno.serve`).
 */
import { randomBytes } from "node:crypto";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Tool } from "../agent/tools/define.js";
import { type App, type CreateAppOptions, createApp, startFailureLines } from "../app.js";
import type { CustomAuthPolicy } from "../auth/custom.js";
import { isAppError, SettingsError, type SettingsProblem } from "../errors.js";
import { createLogger } from "../observability/logger.js";
import { layerEnv, parseEnvFile } from "../settings/env-file.js";
import { parseSettings } from "../settings/parse.js";
import { errnoCode } from "../files.js";
import { hostReadText } from "./files.js";

/** A server that listens: stop() stops accepting and resolves once open connections have closed. */
export interface Listening {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Starts the runtime's server. Rejects (or throws) with an error whose `code` is the errno name
 * (`EADDRINUSE`, `EACCES`) when the address cannot be listened on: Node, Bun and Deno all set it.
 */
export type Listen = (options: { fetch: App["fetch"]; hostname: string; port: number }) => Promise<Listening>;

export interface EntryOptions {
  readonly listen: Listen;
  /** What this runtime adds to createApp (its outbound fetch, trace export). */
  readonly app?: Omit<CreateAppOptions, "env" | "readText" | "playgroundKey" | "logWrite" | "tools" | "authPolicy">;
  readonly argv?: readonly string[];
  /**
   * Called with the environment before the app is made: a runtime it selects (RUNTIME=graph-server)
   * brings its own server and adds to createApp; undefined keeps `listen` and `app`.
   */
  readonly select?: (env: Readonly<Record<string, string | undefined>>) => Promise<Pick<EntryOptions, "listen" | "app"> | undefined>;
}

const DEV_DEFAULTS = { APP_ENV: "dev", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", CHECKPOINTER: "memory" };

const out = (line: string) => void process.stdout.write(`${line}\n`);
const fail = (line: string, code: number): never => {
  process.stderr.write(`${line}\n`);
  process.exit(code);
};

export async function runEntry(options: EntryOptions): Promise<void> {
  const argv = options.argv ?? process.argv.slice(2);
  const dev = argv.includes("--dev");
  const env = layerEnv(dev ? DEV_DEFAULTS : {}, readEnvFile(process.env.ENV_FILE ?? ".env"), process.env);
  let playgroundKey: string | undefined;
  if (dev && !env.API_KEY) {
    playgroundKey = `dev-${randomBytes(16).toString("hex")}`;
    env.API_KEY = playgroundKey;
  }
  // Every bad variable is named at once, with the files the environment names that are not
  // there, before a module it names is loaded (whose own failure would otherwise hide them):
  // createApp parses the same environment again.
  checkSettings(env);
  const authPolicy = env.AUTH_CUSTOM_MODULE ? await loadAuthPolicy(env.AUTH_CUSTOM_MODULE) : undefined;
  const tools = env.TOOLS_MODULE ? await loadTools(env.TOOLS_MODULE) : undefined;
  const selected = await options.select?.(env);
  const listen = selected?.listen ?? options.listen;
  const app = await startApp({
    ...options.app,
    ...selected?.app,
    ...(authPolicy ? { authPolicy } : {}),
    ...(tools ? { tools } : {}),
    env,
    readText: hostReadText(process.cwd()),
    playgroundKey,
    logWrite: out,
  });

  const { HOST: hostname, PORT: port } = app.settings;
  // The entry's own lines follow the service's log format: one JSON object per line outside dev.
  const log = createLogger({ level: app.settings.LOG_LEVEL, format: app.settings.logFormat, write: out, name: "runtime" });
  let server: Listening;
  try {
    server = await listen({ fetch: app.fetch, hostname, port });
  } catch (error) {
    const code = errnoCode(error);
    const reason = code === "EADDRINUSE" ? "is in use" : code === "EACCES" ? "needs privileges this process lacks" : `cannot be listened on (${code})`;
    return fail(`The service cannot start: PORT ${port} on HOST ${hostname} ${reason}.`, 2);
  }
  const base = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${server.port}`;
  if (!app.settings.dev) log.info(`Agent service listening on ${base}`);
  else {
    out(`Agent service listening on ${base}`);
    out(`  playground: ${base}/playground   docs: ${base}/docs`);
    if (playgroundKey) out(`  development API key: ${playgroundKey}`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining ${app.activeRuns} run(s)`);
    // Stop accepting; open streams keep their sockets until their runs end.
    const closed = server.stop().catch(() => undefined);
    await app.drain(app.settings.DRAIN_GRACE_S * 1000);
    await app.close();
    // Let the last bytes of drained streams reach their sockets, within a bound.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
    clearTimeout(timer);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/**
 * ENV_FILE (default `.env`): missing is fine, unreadable or malformed stops startup (exit 2),
 * naming the file and the line, never a value in it.
 */
function readEnvFile(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(resolve(path), "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return {};
    return fail(`The service cannot start: the env file ${path} cannot be read (${errnoCode(error)}).`, 2);
  }
  try {
    return parseEnvFile(text);
  } catch (error) {
    return fail(`The service cannot start: the env file ${path}: ${(error as Error).message}.`, 2);
  }
}

/**
 * A start refused for a reason of ours stops here: its lines on stderr (startFailureLines) and
 * its exit code, 3 for the API policy, 2 for settings and the rest; any other error goes on.
 */
function stopOnStartFailure(error: unknown): void {
  const lines = startFailureLines(error);
  if (lines === undefined) return;
  process.stderr.write(lines.map((line) => `${line}\n`).join(""));
  process.exit(isAppError(error) && error.code === "invalid_policy" ? 3 : 2);
}

/**
 * The settings, and the files named by RESPONSE_SCHEMA_PATH, AUTH_CUSTOM_MODULE and TOOLS_MODULE
 * (missing, a directory, unreadable), named together in one start (exit 2). A TOOLS_MODULE file
 * that is the only problem is left to loadTools, which names it with CONTRACT's exit 3.
 */
function checkSettings(env: Readonly<Record<string, string | undefined>>): void {
  const problems: SettingsProblem[] = [];
  try {
    parseSettings(env);
  } catch (error) {
    if (!isAppError(error) || error.code !== "invalid_settings") throw error;
    problems.push(...(error as SettingsError).problems);
  }
  const files = namedFileProblems(env);
  if (problems.length > 0 || files.some((p) => p.variable !== "TOOLS_MODULE")) stopOnStartFailure(new SettingsError([...problems, ...files]));
}

/** What is wrong with the files the settings name, by the variable (never the path). */
function namedFileProblems(env: Readonly<Record<string, string | undefined>>): SettingsProblem[] {
  const problems: SettingsProblem[] = [];
  const schema = env.RESPONSE_SCHEMA_PATH;
  const named: [string, string | undefined][] = [
    ["RESPONSE_SCHEMA_PATH", schema === "none" ? undefined : schema],
    ["AUTH_CUSTOM_MODULE", env.AUTH_CUSTOM_MODULE],
    ["TOOLS_MODULE", env.TOOLS_MODULE],
  ];
  for (const [variable, path] of named) {
    if (!path) continue;
    const problem = fileProblem(resolve(path));
    if (problem) problems.push({ variable, message: problem });
  }
  return problems;
}

function fileProblem(path: string): string | undefined {
  try {
    if (statSync(path).isDirectory()) return "names a directory, not a file";
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return "names a file that does not exist";
    return `names a file that cannot be read (${code})`;
  }
}

/** createApp, or the reasons it refused, one line each, and the exit code (2 settings, 3 policy). */
async function startApp(options: CreateAppOptions): Promise<App> {
  try {
    return await createApp(options);
  } catch (error) {
    stopOnStartFailure(error);
    throw error;
  }
}

/**
 * AUTH_CUSTOM_MODULE: an ES module whose default (or `policy`) export is the custom auth policy.
 * One that does not load, or exports something else, stops startup naming the variable (exit
 * 2); as with TOOLS_MODULE, the module's own error is not printed (it may quote its source).
 */
async function loadAuthPolicy(path: string): Promise<CustomAuthPolicy> {
  let mod: { default?: CustomAuthPolicy; policy?: CustomAuthPolicy };
  try {
    mod = (await import(pathToFileURL(resolve(path)).href)) as typeof mod;
  } catch (error) {
    return fail(`The service cannot start: AUTH_CUSTOM_MODULE does not load (${loadFailure(error)}).`, 2);
  }
  const policy = mod.default ?? mod.policy;
  if (!policy || typeof policy.authenticate !== "function") return fail("The service cannot start: AUTH_CUSTOM_MODULE must export (default or `policy`) an object with authenticate(request).", 2);
  return policy;
}

/** A module's load failure as its error's name and code, without its message. */
function loadFailure(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return `${error instanceof Error ? error.name : "error"}${typeof code === "string" ? ` ${code}` : ""}`;
}

/**
 * TOOLS_MODULE (CONTRACT 7): an ES module whose default export, or export `tools`, is an array
 * of defineTool tools. One that does not load, or exports something else, stops startup naming
 * the variable (exit 3, a configuration problem); the module's own error is not printed, since
 * it may quote the module's source.
 */
async function loadTools(path: string): Promise<Tool[]> {
  const stop = (why: string): never => fail(`The service cannot start: TOOLS_MODULE ${why}.`, 3);
  let mod: { default?: unknown; tools?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(path)).href)) as typeof mod;
  } catch (error) {
    return stop(`does not load (${loadFailure(error)})`);
  }
  const tools = mod.default ?? mod.tools;
  const isTool = (t: unknown) =>
    typeof t === "object" && t !== null && typeof (t as Tool).name === "string" && typeof (t as Tool).run === "function" && typeof (t as Tool).check === "function";
  // An empty array is an agent with no tools, as createApp({ tools: [] }) makes it.
  if (!Array.isArray(tools) || !tools.every(isTool)) return stop("must export (default or `tools`) an array of tools made with defineTool");
  return tools as Tool[];
}
