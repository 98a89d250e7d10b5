/**
 * The rules of the system file between keys and between agents (spec 2.9), after each part passed
 * its own schema. The file is unusable when: a project directory is missing or named by two
 * agents; an edge names an unknown agent or the agent itself; one agent calls another twice; two
 * agents share a client id or an actor id; an exchange edge lacks `identity`; an environment or a
 * `token_url`/`max_connections` key is unknown. Also placed here: an edge's `calls` without ask or
 * with a repeat, exchange-only keys on an edge written with another auth, `port_base` beside `url`,
 * a URL template without `{agent}`/`{project}` or with another placeholder, and a `port_base` that
 * runs past the last port.
 */
import { isHttpUrl } from "../../settings/fields.js";
import type { PolicyProblem } from "../../policy/document.js";
import { type EdgeInput, URL_PLACEHOLDERS } from "./schema.js";
import type { AuthPolicyName, EdgeAuth, EnvironmentInput, LoadedAgent, System, SystemAgent, SystemEdge, SystemEnvironment, SystemHost } from "./types.js";

export interface SystemParts {
  readonly name: string | undefined;
  readonly agents: readonly LoadedAgent[];
  /** Parsed; undefined when absent or when its own schema failed (then `identityWritten` says which). */
  readonly identity: System["identity"] | undefined;
  readonly identityWritten: boolean;
  /** Every well-named environment written, whether or not its settings parsed. */
  readonly environmentNames: ReadonlySet<string>;
  readonly environments: ReadonlyMap<string, EnvironmentInput>;
  /** Keys written under identity.token_url (mapping form) and database.max_connections, when they parsed. */
  readonly tokenUrlKeys: readonly string[];
  readonly maxConnections: Readonly<Record<string, number>>;
  readonly parallel: number;
  readonly environment: string | undefined;
}

/** The edge auth an agent's auth policy implies when the edge does not say. */
export const DEFAULT_EDGE_AUTH: Readonly<Record<AuthPolicyName, EdgeAuth>> = { jwt: "exchange", custom: "forward", "shared-bearer": "bearer" };

export async function checkSystem(parts: SystemParts, host: SystemHost, problems: PolicyProblem[]): Promise<System> {
  const add = (place: string, message: string) => problems.push({ place, message });
  const names = new Set(parts.agents.map((a) => a.name));
  const agents: SystemAgent[] = [];
  const dirs = new Map<string, string>();
  const clientIds = new Map<string, string>();
  const actorIds = new Map<string, string>();

  for (const loaded of parts.agents) {
    const input = loaded.input;
    if (!input) continue;
    const place = `agents.${loaded.name}`;
    const dir = await host.projectDir(input.project);
    if (dir === undefined) add(`${place}.project`, `there is no directory ${input.project} (relative to the system file)`);
    else if (dirs.has(dir)) add(`${place}.project`, `names the same directory as agents.${dirs.get(dir)}.project`);
    else dirs.set(dir, loaded.name);

    const clientId = input.client_id ?? loaded.name;
    const actorId = input.actor_id ?? clientId;
    const other = (ids: Map<string, string>, id: string, key: string, what: string) => {
      const first = ids.get(id);
      if (first !== undefined) add(`${place}.${key}`, `${JSON.stringify(id)}${input[key as "client_id"] === undefined ? " (the default)" : ""} is also the ${what} of agent ${first}`);
      else ids.set(id, loaded.name);
    };
    other(clientIds, clientId, "client_id", "client id");
    other(actorIds, actorId, "actor_id", "actor id");

    const authPolicy = dir === undefined ? "shared-bearer" : await host.authPolicy(dir);
    const calls = readEdges(loaded.name, place, input.calls ?? [], authPolicy, names, parts, add);
    agents.push({ name: loaded.name, index: loaded.index, project: input.project, dir: dir ?? input.project, clientId, actorId, authPolicy, calls });
  }

  const environments = readEnvironments(parts, add);
  for (const key of parts.tokenUrlKeys) if (!parts.environmentNames.has(key)) add(`identity.token_url.${key}`, "unknown environment");
  for (const key of Object.keys(parts.maxConnections)) if (!parts.environmentNames.has(key)) add(`database.max_connections.${key}`, "unknown environment");
  if (parts.environment !== undefined && !parts.environmentNames.has(parts.environment)) add("--env", `unknown environment ${JSON.stringify(parts.environment)}`);

  return {
    name: parts.name,
    agents,
    identity: parts.identity,
    environments,
    maxConnections: parts.maxConnections,
    parallel: parts.parallel,
  };
}

function readEdges(
  caller: string,
  place: string,
  written: readonly (string | EdgeInput)[],
  authPolicy: AuthPolicyName,
  names: ReadonlySet<string>,
  parts: SystemParts,
  add: (place: string, message: string) => void,
): SystemEdge[] {
  const edges: SystemEdge[] = [];
  const seen = new Map<string, number>();
  written.forEach((entry, i) => {
    const at = `${place}.calls[${i}]`;
    const mapping = typeof entry !== "string";
    const e: EdgeInput = mapping ? entry : { agent: entry, approvals: "relay", allow_actorless: false, calls: ["ask", "status"] };
    const agentAt = mapping ? `${at}.agent` : at;
    if (!names.has(e.agent)) add(agentAt, `unknown agent ${e.agent}`);
    else if (e.agent === caller) add(agentAt, "is the agent itself; an agent does not call itself");
    else if (seen.has(e.agent)) add(agentAt, `calls ${e.agent} a second time (also at calls[${seen.get(e.agent)}])`);
    else seen.set(e.agent, i);

    if (!e.calls.includes("ask")) add(`${at}.calls`, "must include ask");
    if (new Set(e.calls).size !== e.calls.length) add(`${at}.calls`, "names a call twice");

    const auth = e.auth ?? DEFAULT_EDGE_AUTH[authPolicy];
    if (auth === "exchange" && !parts.identityWritten)
      add(`${at}.auth`, `${e.auth ? "exchange" : `is exchange (the default under agent ${caller}'s ${authPolicy} auth policy), which`} needs identity (the token issuer) at the top level`);
    if (e.auth !== undefined && e.auth !== "exchange") {
      if (e.scope !== undefined) add(`${at}.scope`, "is only valid with auth exchange");
      if (e.allow_actorless) add(`${at}.allow_actorless`, "is only valid with auth exchange");
    }
    edges.push({
      place: at,
      agent: e.agent,
      approvals: e.approvals,
      auth,
      authWritten: e.auth !== undefined,
      scope: e.scope,
      allowActorless: e.allow_actorless,
      calls: e.calls,
      description: e.description,
    });
  });
  return edges;
}

function readEnvironments(parts: SystemParts, add: (place: string, message: string) => void): Map<string, SystemEnvironment> {
  const out = new Map<string, SystemEnvironment>();
  const count = parts.agents.length;
  for (const [name, env] of parts.environments) {
    const place = `environments.${name}`;
    if (env === null || (env.port_base === undefined && env.url === undefined)) {
      out.set(name, { name, kind: "cluster" });
      continue;
    }
    if (env.port_base !== undefined && env.url !== undefined) {
      add(place, "port_base and url are mutually exclusive");
      continue;
    }
    if (env.port_base !== undefined) {
      const last = env.port_base + Math.max(0, count - 1);
      if (last > 65535) add(`${place}.port_base`, `leaves no port for the last agent (${env.port_base} + ${count - 1} is past 65535)`);
      else out.set(name, { name, kind: "local", portBase: env.port_base });
      continue;
    }
    const url = env.url!;
    const used = [...url.matchAll(/\{([^{}]*)\}/g)].map((m) => m[1]!);
    const strange = used.filter((p) => !(URL_PLACEHOLDERS as readonly string[]).includes(p));
    if (strange.length > 0) add(`${place}.url`, `has an unknown placeholder {${strange[0]}} (use {agent}, {project}, {env})`);
    else if (!used.includes("agent") && !used.includes("project")) add(`${place}.url`, "must contain {agent} or {project}");
    else if (!isHttpUrl(fillUrl(url, { agent: "a", project: "p", env: name }))) add(`${place}.url`, "must give an absolute http(s) URL");
    else out.set(name, { name, kind: "url", url });
  }
  return out;
}

/** A URL template with its placeholders filled. */
export function fillUrl(template: string, values: { agent: string; project: string; env: string }): string {
  return template.replace(/\{(agent|project|env)\}/g, (_, key: keyof typeof values) => values[key]);
}
