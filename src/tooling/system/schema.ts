/**
 * The system file (spec 2.9) as zod schemas: strict objects at every level (unknown keys are
 * errors), each key's own rule here; the rules between keys and agents (unknown agents, shared
 * ids, project directories, environment names used elsewhere) are in ./rules.ts, where each
 * problem can be placed and explained.
 *
 * schemas/system.schema.json, for editors, is generated from these (`npm run schemas`; a test
 * fails when the committed file is stale). Meta never changes parsing.
 */
import { z } from "zod";
import { isHttpUrl } from "../../settings/fields.js";

export const AGENT_NAME = /^[a-z][a-z0-9_]{0,25}$/;
export const ENVIRONMENT_NAME = /^[a-z][a-z0-9-]{0,30}$/;
const SYSTEM_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** Client and actor ids: no whitespace, commas or control characters (the length is checked in code points). */
const ID_CHARS = /^[^\s,\u0000-\u001f\u007f-\u009f]+$/;
const NO_CTRL = /^[^\u0000-\u001f\u007f-\u009f]*$/;
/** RFC 6749 scope tokens separated by single spaces (as the policy's exchange.scope). */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;
/** The placeholders a URL template may use. */
export const URL_PLACEHOLDERS = ["agent", "project", "env"] as const;

export const EDGE_CALLS = ["ask", "status", "cancel"] as const;
export type EdgeCall = (typeof EDGE_CALLS)[number];

const codePoints = (s: string) => [...s].length;

const id = (what: string) =>
  z
    .string({ message: "must be text" })
    .regex(ID_CHARS, { message: "must have no whitespace, commas or control characters" })
    .refine((s) => codePoints(s) <= 256, { message: "must be at most 256 characters" })
    .meta({ minLength: 1, maxLength: 256, description: what });

const agentName = z
  .string()
  .regex(AGENT_NAME, { message: "must be 1-26 lowercase letters, digits or _, starting with a letter" })
  .meta({ id: "agentName", description: "An agent's name: 1-26 lowercase letters, digits or _, starting with a letter." });

const environmentName = z
  .string()
  .regex(ENVIRONMENT_NAME, { message: "must be 1-31 lowercase letters, digits or -, starting with a letter" })
  .meta({ id: "environmentName", description: "An environment's name: 1-31 lowercase letters, digits or -, starting with a letter." });

export const edgeSchema = z
  .strictObject(
    {
      agent: agentName.describe("The agent called (required)."),
      approvals: z
        .enum(["relay", "deny"], { message: "must be relay or deny" })
        .default("relay")
        .describe("relay (default): the callee's approvals that relay through the caller are decided by the person at the caller; deny: the caller never sends a decision, the person decides at the callee."),
      auth: z
        .enum(["exchange", "forward", "bearer"], { message: "must be exchange, forward or bearer" })
        .describe("How the caller authenticates to the callee. Default by the caller's auth policy: jwt exchange, custom forward, shared-bearer bearer."),
      scope: z
        .string({ message: "must be text" })
        .regex(SCOPE, { message: "must be scope tokens separated by single spaces (RFC 6749)" })
        .describe("Scopes of the exchanged token (auth exchange only)."),
      allow_actorless: z
        .boolean({ message: "must be true or false" })
        .default(false)
        .describe("auth exchange only: let through an exchanged token that names no actor (default false)."),
      calls: z
        .array(z.enum(EDGE_CALLS, { message: "must be ask, status or cancel" }), { message: "must be a list" })
        .default(["ask", "status"])
        .meta({ uniqueItems: true, contains: { const: "ask" } })
        .describe("The tools the caller gets for the callee: a subset of ask, status, cancel that includes ask (default [ask, status])."),
      description: z
        .string({ message: "must be text" })
        .regex(NO_CTRL, { message: "must not contain control characters" })
        .refine((s) => codePoints(s) <= 300, { message: "must be at most 300 characters" })
        .meta({ maxLength: 300 })
        .describe("What the caller asks the callee for (at most 300 characters); the model reads it in the tool's description."),
    },
    { message: "must be a mapping" },
  )
  .partial({ auth: true, scope: true, description: true })
  .meta({ id: "edge", description: "One call from this agent to another." });

export type EdgeInput = z.output<typeof edgeSchema>;

export const agentSchema = z
  .strictObject(
    {
      project: z.string({ message: "must be a directory" }).min(1, { message: "must not be empty" }).describe("The agent's project directory, relative to the system file (required)."),
      client_id: id("The agent's client id (default the agent's name)."),
      actor_id: id("The act.sub the issuer writes into this agent's exchanged tokens (default the client id)."),
      calls: z
        .array(z.union([agentName, edgeSchema], { message: "must be an agent name or an edge mapping" }), { message: "must be a list" })
        .describe("The agents this one calls: names, or edges with their settings."),
    },
    { message: "must be a mapping" },
  )
  .partial({ client_id: true, actor_id: true, calls: true })
  .meta({ id: "agent", description: "One agent project of the system." });

export type AgentInput = z.output<typeof agentSchema>;

export const environmentSchema = z
  .union(
    [
      z.null(),
      z.strictObject(
        {
          port_base: z
            .number({ message: "must be a whole number" })
            .int({ message: "must be a whole number" })
            .min(1024, { message: "must be at least 1024" })
            .max(65000, { message: "must be at most 65000" })
            .describe("Local processes: the first agent listens on port_base, the next on port_base + 1, in file order."),
          url: z
            .string({ message: "must be a URL template" })
            .min(1, { message: "must not be empty" })
            .meta({ pattern: "\\{(agent|project)\\}" })
            .describe("Where each agent is reached: a URL template with {agent} or {project}, optionally {env}."),
        },
        { message: "must be a mapping with port_base or url, or empty" },
      )
        .partial(),
    ],
    { message: "must be a mapping with port_base or url, or empty" },
  )
  .meta({ id: "environment", description: "{port_base} (local processes), {url: TEMPLATE}, or empty (the in-cluster address). port_base and url are mutually exclusive." });

export type EnvironmentInput = z.output<typeof environmentSchema>;

const httpUrl = z
  .string({ message: "must be a URL" })
  .refine(isHttpUrl, { message: "must be an absolute http(s) URL" })
  .meta({ pattern: "^[Hh][Tt][Tt][Pp][Ss]?://" });

export const systemSchema = z
  .strictObject(
    {
      version: z.literal(1, { message: "must be 1" }).describe("The file format's version: 1."),
      name: z
        .string({ message: "must be text" })
        .regex(SYSTEM_NAME, { message: "must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit" })
        .describe("The system's name."),
      agents: z
        .record(agentName, agentSchema, { message: "must be a mapping of agent names" })
        .refine((r) => Object.keys(r).length > 0, { message: "must name at least one agent" })
        .meta({ minProperties: 1 })
        .describe("The agent projects, by name (required). File order gives each its port under port_base."),
      identity: z
        .strictObject(
          {
            issuer: z.string({ message: "must be text" }).min(1, { message: "must not be empty" }).describe("The token issuer (required)."),
            token_url: z
              .union([httpUrl, z.record(environmentName, httpUrl)], { message: "must be a URL or a mapping of environment names to URLs" })
              .describe("The issuer's token endpoint (RFC 8693 exchange): one URL, or one per environment."),
          },
          { message: "must be a mapping with issuer" },
        )
        .partial({ token_url: true })
        .describe("The token issuer the agents exchange tokens with. Required by any exchange edge."),
      environments: z
        .record(environmentName, environmentSchema, { message: "must be a mapping of environment names" })
        .describe("Where the agents run, by environment name."),
      database: z
        .strictObject(
          {
            max_connections: z
              .record(
                environmentName,
                z.number({ message: "must be a whole number" }).int({ message: "must be a whole number" }).min(1, { message: "must be at least 1" }),
                { message: "must be a mapping of environment names to numbers" },
              )
              .describe("Most database connections per environment."),
          },
          { message: "must be a mapping" },
        )
        .partial(),
      deploy: z
        .strictObject(
          {
            parallel: z
              .number({ message: "must be a whole number" })
              .int({ message: "must be a whole number" })
              .min(1, { message: "must be at least 1" })
              .max(16, { message: "must be at most 16" })
              .default(3)
              .describe("How many agents are deployed at once (1-16, default 3)."),
          },
          { message: "must be a mapping" },
        )
        .partial(),
    },
    { message: "must be a mapping" },
  )
  .partial({ name: true, identity: true, environments: true, database: true, deploy: true })
  .meta({
    $id: "urn:agent-service:schemas:system",
    title: "System file (several agent projects that call each other)",
    description:
      "Names several agent projects and which calls which (spec 2.9). Unknown keys are errors at every level. This schema is for editors; `agentcli system check FILE` also checks the rules between keys and agents (unknown or repeated agents in calls, shared client or actor ids, project directories, environment names).",
  });

export type SystemInput = z.output<typeof systemSchema>;

