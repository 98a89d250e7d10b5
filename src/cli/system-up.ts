/// <reference types="node" />
/**
 * `agentcli system up FILE --env NAME`: every agent of a `port_base` environment as a local
 * process of the built Node entry (`node dist/node.js`), in its project directory (its `.env`,
 * `api-policy.yaml` and tools are read there as `npm start` would), on 127.0.0.1 at port_base +
 * its place in the file. Each caller gets the `protocol: a2a` APIs its edges need, merged into
 * its own policy in a generated file it reads through API_POLICY_PATH, and the variables they
 * name (the callee's URL, and for bearer edges the key). The file's `deploy.parallel` (default 3)
 * agents start at once; the next starts when one of them listens, and none after one fails
 * (those up are stopped, exit 3). Every agent gets the same API_KEY: the process's, else one
 * made up for the session and printed, as `npm run dev` does. Ctrl-C or SIGTERM stops them all
 * (each drains its runs) and removes the generated files.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { PolicyProblem } from "../policy/document.js";
import { a2aPathOf, edgeApis, mergePolicy, peerTokenEnv, peerUrlEnv } from "../tooling/system/policy-entries.js";
import type { System, SystemAgent } from "../tooling/system/types.js";
import { safeLine } from "./escape.js";
import type { Printer } from "./output.js";
import { projectEnvFile } from "./system-host.js";
import { startLimited } from "./start-limited.js";
import { readSystem } from "./system.js";

const HOST = "127.0.0.1";
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 20_000;

interface Running {
  readonly agent: SystemAgent;
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | string | null>;
  readonly listening: Promise<boolean>;
}

export async function systemUp(p: Printer, file: string, environment: string): Promise<number> {
  const system = await readSystem(p, file, environment);
  if (typeof system === "number") return system;
  const env = system.environments.get(environment);
  if (!env || env.kind !== "local") {
    p.error(`environment ${safeLine(environment)} has no port_base: system up starts local processes only`);
    return 3;
  }
  const entry = fileURLToPath(new URL("./node.js", import.meta.url));
  if (!existsSync(entry)) {
    p.error(`the service is not built (no ${entry}): run npm run build`);
    return 3;
  }
  const budget = system.maxConnections[environment];
  if (budget !== undefined && budget < system.agents.length) {
    p.error(`database.max_connections.${safeLine(environment)}: ${budget} connection${budget === 1 ? "" : "s"} cannot serve ${system.agents.length} agents (at least one each)`);
    return 3;
  }
  const ports = new Map(system.agents.map((a) => [a.name, env.portBase + a.index]));
  const generated = process.env.API_KEY ? undefined : `dev-${randomBytes(16).toString("hex")}`;
  const apiKey = process.env.API_KEY ?? generated!;

  const dir = mkdtempSync(join(tmpdir(), "agentcli-system-"));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  const envs = new Map<string, Record<string, string>>();
  const problems: PolicyProblem[] = [];
  for (const agent of system.agents) {
    const vars = agentEnv(system, agent, ports, apiKey, environment);
    const policy = policyFor(system, agent, file);
    if (policy && !policy.ok) problems.push(...policy.problems.map((pr) => ({ place: `agents.${agent.name} policy ${pr.place}`, message: pr.message })));
    if (policy?.ok) {
      const path = join(dir, `${agent.name}.api-policy.yaml`);
      writeFileSync(path, policy.text);
      vars.API_POLICY_PATH = path;
    }
    envs.set(agent.name, vars);
  }
  if (problems.length > 0) {
    cleanup();
    for (const pr of problems) process.stderr.write(`${safeLine(pr.place)}: ${safeLine(pr.message)}\n`);
    p.error(`the generated policies have ${problems.length} problem${problems.length === 1 ? "" : "s"}`);
    return 3;
  }

  // deploy.parallel agents start at once; the next starts when one of them listens.
  const running: Running[] = [];
  const failed: Running[] = [];
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    for (const r of running) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGTERM");
    const timer = setTimeout(() => running.forEach((r) => r.child.exitCode === null && r.child.signalCode === null && r.child.kill("SIGKILL")), STOP_TIMEOUT_MS);
    await Promise.all(running.map((r) => r.exited));
    clearTimeout(timer);
    cleanup();
  };
  let signal: string | undefined;
  const signalled = new Promise<string>((resolve) => {
    const on = (name: string) => () => resolve((signal ??= name));
    process.once("SIGINT", on("SIGINT"));
    process.once("SIGTERM", on("SIGTERM"));
  });

  if (system.agents.length > system.parallel)
    p.text(`starting ${system.agents.length} agents, ${system.parallel} at a time (deploy.parallel)\n`);
  const startup = startLimited(
    system.agents,
    system.parallel,
    async (agent) => {
      const r = start(p, agent, entry, envs.get(agent.name)!, `http://${HOST}:${ports.get(agent.name)}`);
      running.push(r);
      const up = await r.listening;
      if (!up) failed.push(r);
      return up;
    },
    () => stopping || signal !== undefined,
  );
  const started = await Promise.race([startup, signalled.then(() => "signal" as const)]);
  if (started === "signal" || signal !== undefined) {
    await stopAll();
    return 0;
  }
  if (!started) {
    for (const r of failed) p.error(`agent ${r.agent.name} did not start (exit ${String(r.child.exitCode ?? r.child.signalCode ?? "timeout")}); stopping the others`);
    await stopAll();
    return 3;
  }
  for (const r of running) {
    p.record({ agent: r.agent.name, url: r.url, a2a: `${r.url}${a2aPathOf(r.agent.name)}`, calls: r.agent.calls.map((e) => e.agent), pid: r.child.pid });
    p.text(`${r.agent.name.padEnd(26)} ${r.url}  A2A ${a2aPathOf(r.agent.name)}${r.agent.calls.length ? `  calls ${r.agent.calls.map((e) => e.agent).join(", ")}` : ""}\n`);
  }
  p.text(`${generated ? `development API key of every agent: ${generated}` : "API key of every agent: $API_KEY"}\nCtrl-C stops them all.\n`);

  const ended = await Promise.race([signalled.then(() => undefined), ...running.map((r) => r.exited.then(() => r))]);
  if (ended === undefined) {
    await stopAll();
    return 0;
  }
  if (!stopping) p.error(`agent ${ended.agent.name} exited (${String(ended.child.exitCode ?? ended.child.signalCode)}); stopping the others`);
  await stopAll();
  return 1;
}

/** The variables an agent's process gets above its own environment and `.env`. */
function agentEnv(system: System, agent: SystemAgent, ports: ReadonlyMap<string, number>, apiKey: string, environment: string): Record<string, string> {
  const port = ports.get(agent.name)!;
  const vars: Record<string, string> = { HOST, PORT: String(port), A2A_NAME: agent.name, APP_URL: `http://${HOST}:${port}`, API_KEY: apiKey };
  for (const edge of agent.calls) {
    vars[peerUrlEnv(edge.agent)] = `http://${HOST}:${ports.get(edge.agent)}`;
    if (edge.auth === "bearer") vars[peerTokenEnv(edge.agent)] = apiKey;
  }
  Object.assign(vars, poolWithin(system, agent, environment));
  if (agent.calls.some((e) => e.auth === "exchange")) {
    vars.TOKEN_EXCHANGE_CLIENT_ID = agent.clientId;
    const url = system.identity?.tokenUrl;
    const tokenUrl = typeof url === "string" ? url : url?.[environment];
    if (tokenUrl) vars.TOKEN_EXCHANGE_URL = tokenUrl;
  }
  // A callee reached with the user's identity (exchange, forward) must let its callers act for the user.
  const delegating = system.agents.filter((a) => a.calls.some((e) => e.agent === agent.name && e.auth !== "bearer")).map((a) => a.actorId);
  if (delegating.length > 0) {
    const own = process.env.AUTH_ALLOWED_ACTORS ?? projectEnvFile(agent.dir).AUTH_ALLOWED_ACTORS ?? "";
    if (own.trim() !== "*") vars.AUTH_ALLOWED_ACTORS = [...new Set([...own.split(",").map((s) => s.trim()).filter(Boolean), ...delegating])].join(",");
  }
  return vars;
}

/**
 * The environment's database.max_connections shared out: each agent's pool (DB_POOL_MAX_SIZE) at
 * most an equal share of it, its own setting when lower; DB_POOL_MIN_SIZE brought down to the
 * share when it is above (the pool's minimum may not exceed its maximum). Nothing without a budget.
 */
function poolWithin(system: System, agent: SystemAgent, environment: string): Record<string, string> {
  const budget = system.maxConnections[environment];
  if (budget === undefined) return {};
  // The agent's own values as its startup reads them: the process environment over its .env.
  const file = projectEnvFile(agent.dir);
  const own = (name: string) => process.env[name] ?? file[name];
  const share = Math.floor(budget / system.agents.length);
  // A value of the agent's own that does not parse is left for its startup to name, not replaced.
  const ownMax = poolSize(own("DB_POOL_MAX_SIZE"));
  if (ownMax === null) return {};
  const max = ownMax !== undefined && ownMax >= 1 && ownMax < share ? ownMax : share;
  const vars: Record<string, string> = { DB_POOL_MAX_SIZE: String(max) };
  const ownMin = poolSize(own("DB_POOL_MIN_SIZE"));
  if (ownMin !== undefined && ownMin !== null && ownMin > max) vars.DB_POOL_MIN_SIZE = String(max);
  return vars;
}

/** A pool size as the settings read it: undefined when unset (or empty), null when not a whole number. */
function poolSize(value: string | undefined): number | undefined | null {
  if (value === undefined || value === "") return undefined;
  return /^\s*\d+\s*$/.test(value) ? Number(value.trim()) : null;
}

/** The agent's policy with its edges' APIs, or undefined when it calls nobody (its own policy stays as it is). */
function policyFor(system: System, agent: SystemAgent, file: string): ReturnType<typeof mergePolicy> | undefined {
  if (agent.calls.length === 0) return undefined;
  const ownPath = resolve(agent.dir, process.env.API_POLICY_PATH ?? projectEnvFile(agent.dir).API_POLICY_PATH ?? "api-policy.yaml");
  let own: string | undefined;
  try {
    own = readFileSync(ownPath, "utf8");
  } catch {
    own = undefined;
  }
  const header = `Generated by agentcli system up from ${file} for agent ${agent.name}: the project's own policy${own === undefined ? " (none)" : ` (${ownPath})`}
and one protocol a2a API per agent it calls. Removed when the system stops; do not edit.`;
  return mergePolicy(own, relative(process.cwd(), ownPath) || ownPath, edgeApis(system, agent), header);
}

function start(p: Printer, agent: SystemAgent, entry: string, vars: Record<string, string>, url: string): Running {
  const child = spawn(process.execPath, ["--enable-source-maps", entry], { cwd: agent.dir, env: { ...process.env, ...vars }, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | string | null>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  let seen = "";
  const listening = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), START_TIMEOUT_MS);
    child.stdout!.on("data", (chunk: Buffer) => {
      if (seen.length < 100_000) seen += chunk.toString("utf8");
      if (/listening on/.test(seen)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  prefixLines(child.stdout!, `[${agent.name}] `, (s) => (p.json ? process.stderr : process.stdout).write(s));
  prefixLines(child.stderr!, `[${agent.name}] `, (s) => process.stderr.write(s));
  return { agent, url, child, exited, listening };
}

function prefixLines(stream: NodeJS.ReadableStream, prefix: string, write: (s: string) => void): void {
  let rest = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    for (const line of lines) write(`${prefix}${safeLine(line)}\n`);
  });
  stream.on("end", () => rest && write(`${prefix}${safeLine(rest)}\n`));
}
