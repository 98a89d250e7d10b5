/**
 * Loads the system file (spec 2.9): YAML with repeated keys refused, each top-level key and each
 * agent by its own zod schema (so one bad agent does not hide the problems of the others), then
 * the rules between agents (./rules.ts). Every problem comes back at once, each with its place
 * (`agents.billing.calls[1].agent: unknown agent`); problems are data, never thrown.
 *
 * Web standards only: the host says what is on disk through `SystemHost` (the command-line
 * client passes one over node:fs), so the loader stays pure and testable.
 */
import { type PolicyProblem, readYaml, zodProblems } from "../../policy/document.js";
import { AGENT_NAME, agentSchema, ENVIRONMENT_NAME, environmentSchema, systemSchema } from "./schema.js";
import { checkSystem } from "./rules.js";
import type { EnvironmentInput, LoadedAgent, System, SystemHost } from "./types.js";

export type SystemProblem = PolicyProblem;

export type SystemLoad = { readonly ok: true; readonly system: System } | { readonly ok: false; readonly problems: readonly SystemProblem[] };

export interface LoadOptions {
  /** The file's path, named where a YAML syntax error is. */
  readonly source?: string;
  /** An environment the caller means to use (`--env`): unknown is a problem too. */
  readonly environment?: string;
}

const TOP_KEYS = Object.keys(systemSchema.shape) as (keyof typeof systemSchema.shape)[];

export async function loadSystem(text: string, host: SystemHost, options: LoadOptions = {}): Promise<SystemLoad> {
  const problems: SystemProblem[] = [];
  const yaml = readYaml(text, options.source);
  if (!yaml.ok) return yaml;
  const raw = yaml.value;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { ok: false, problems: [{ place: "document", message: "must be a mapping" }] };
  const top = raw as Record<string, unknown>;

  const unknown = Object.keys(top).filter((k) => !(TOP_KEYS as string[]).includes(k));
  if (unknown.length > 0) problems.push({ place: "document", message: `has unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}` });
  // Each top-level key by itself; agents and environments entry by entry, so that one bad entry
  // hides nothing about the others and its name still counts where other keys name it.
  const parsed: Record<string, unknown> = {};
  for (const key of TOP_KEYS) {
    if (key === "agents" || key === "environments") continue;
    if (key === "version" && top.version === undefined) {
      problems.push({ place: "version", message: "is required (version: 1)" });
      continue;
    }
    const r = systemSchema.shape[key].safeParse(top[key]);
    if (r.success) parsed[key] = r.data;
    else problems.push(...zodProblems(r.error, key, top[key]));
  }
  const identity = parsed.identity as { issuer: string; token_url?: string | Record<string, string> } | undefined;
  const tokenUrl = identity?.token_url;
  const maxConnections = (parsed.database as { max_connections?: Record<string, number> } | undefined)?.max_connections ?? {};
  const environments = readEntries(top.environments, "environments", ENVIRONMENT_NAME, "environment names must be 1-31 lowercase letters, digits or -, starting with a letter", problems);

  const system = await checkSystem(
    {
      name: parsed.name as string | undefined,
      agents: readEntries(top.agents, "agents", AGENT_NAME, "agent names must be 1-26 lowercase letters, digits or _, starting with a letter", problems, true).map(
        (e, index): LoadedAgent => {
          if (!e.named) return { name: e.name, index, input: undefined };
          const r = agentSchema.safeParse(e.value);
          if (r.success) return { name: e.name, index, input: r.data };
          problems.push(...zodProblems(r.error, `agents.${e.name}`, e.value));
          return { name: e.name, index, input: undefined };
        },
      ),
      identity: identity && { issuer: identity.issuer, tokenUrl },
      identityWritten: top.identity !== undefined && top.identity !== null,
      environmentNames: new Set(environments.filter((e) => e.named).map((e) => e.name)),
      environments: new Map(
        environments.flatMap((e): [string, EnvironmentInput][] => {
          if (!e.named) return [];
          const r = environmentSchema.safeParse(e.value);
          if (r.success) return [[e.name, r.data]];
          problems.push(...zodProblems(r.error, `environments.${e.name}`, e.value));
          return [];
        }),
      ),
      tokenUrlKeys: tokenUrl && typeof tokenUrl === "object" ? Object.keys(tokenUrl) : [],
      maxConnections,
      parallel: (parsed.deploy as { parallel?: number } | undefined)?.parallel ?? 3,
      environment: options.environment,
    },
    host,
    problems,
  );
  return problems.length > 0 ? { ok: false, problems } : { ok: true, system };
}

/** The entries of a mapping of named things, each name checked; `named` is false for a name that breaks the rule. */
function readEntries(value: unknown, place: string, rule: RegExp, ruleMessage: string, problems: SystemProblem[], required = false): { name: string; named: boolean; value: unknown }[] {
  if (value === undefined || value === null) {
    if (required) problems.push({ place, message: "is required" });
    return [];
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    problems.push({ place, message: `must be a mapping of ${place === "agents" ? "agent" : "environment"} names` });
    return [];
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (required && entries.length === 0) problems.push({ place, message: "must name at least one agent" });
  return entries.map(([name, body]) => {
    const named = rule.test(name);
    if (!named) problems.push({ place: `${place}.${name}`, message: ruleMessage });
    return { name, named, value: body };
  });
}
