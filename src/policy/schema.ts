/**
 * The outbound API policy document (spec 2.6, 2.7) as zod schemas: strict objects at every
 * level (unknown keys are errors), field rules here, rules between fields in document.ts.
 *
 * schemas/api-policy.schema.json, for editors, is generated from these (`npm run schemas`; a test
 * fails when the committed file is stale): the descriptions are its documentation, and `.meta()`
 * carries what only the JSON Schema needs (a pattern for a rule document.ts checks in code with a
 * better message, and the rules between keys, from ./schema-rules.ts). Meta never changes parsing.
 */
import { z } from "zod";
import { API_RULES, APPROVAL_RULES, caseless, OPERATION_ENTRY_NAMES } from "./schema-rules.js";

export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** The largest `limits.max_response_bytes` a policy may set (spec 8: 64 MiB). */
export const MAX_RESPONSE_BYTES = 67_108_864;

const NO_CTRL = /^[^\u0000-\u001f\u007f-\u009f]*$/;
const NO_SPACE_COMMA_CTRL = /^[^\s,\u0000-\u001f\u007f-\u009f]+$/;
export const API_NAME = /^[a-z][a-z0-9_]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const RPC_METHOD = /^[A-Za-z][A-Za-z0-9_/.]{0,63}$/;
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/** A relayer's id: for editors, and document.ts checks relayers with it together with decide_with. */
export const RELAYER = /^[^\s,\u0000-\u001f\u007f-\u009f]{1,256}$/;
const APPROVER = /^(requester|role:[^\s,\u0000-\u001f\u007f-\u009f]{1,256})$/;
/** Path characters, for editors (paths.ts has the rules): no query, fragment, space, ;, backslash or controls. */
const PATH_CHARS = "^/[\\x21\\x22\\x24-\\x3a\\x3c-\\x3e\\x40-\\x5b\\x5d-\\x7e]*$";

/** A method in any case, checked letter by letter (JSON Schema patterns take no flags), then upper-cased. */
const method = z
  .string({ message: "must be an HTTP method" })
  .regex(caseless(HTTP_METHODS), { message: `must be one of ${HTTP_METHODS.join(", ")}` })
  .transform((m) => m.toUpperCase() as HttpMethod)
  .meta({ id: "method", description: "An HTTP method, in any case." });

const methodList = z
  .array(method, { message: "must be a list of methods" })
  .min(1, { message: "must not be empty" })
  .meta({ id: "methodList", description: 'A non-empty list of HTTP methods (no "*").' });

const everyMethod = z.tuple([z.literal("*")]).meta({ id: "everyMethod", description: '["*"] alone: every method.' });

const envName = z
  .string({ message: "must be an environment variable name" })
  .regex(ENV_NAME, { message: "must be an environment variable name" })
  .meta({ id: "envName", description: "The name of an environment variable." });

const text = (max: number) =>
  z
    .string({ message: "must be text" })
    .min(1, { message: "must not be empty" })
    .max(max, { message: `must be at most ${max} characters` });

const noSpaceCommaCtrl = (max: number) => text(max).regex(NO_SPACE_COMMA_CTRL, { message: "must have no spaces, commas or control characters" });

export const operationEntrySchema = z
  .strictObject(
    {
      operationId: z
        .string({ message: "must be text" })
        .regex(/^\S+$/, { message: "must be a label without spaces" })
        .max(256)
        .describe("The operation's label (as in the API's OpenAPI file), without spaces."),
      // Any text parses: paths.ts reports what is wrong with a path more precisely than a pattern.
      path: z.string({ message: "must be a path" }).meta({
        pattern: PATH_CHARS,
        description:
          "A path template starting with /: literal segments and {name} placeholders (whole segments only). No query, fragment, whitespace, empty, . or .. segments, ;, backslash, encoded slash or control characters (also percent-encoded); may end with one /. The loader checks the segment rules.",
      }),
      methods: methodList.describe('The methods of the operation (no "*"); omitted means every method.'),
      rpc_method: z
        .string({ message: "must be text" })
        .regex(RPC_METHOD, { message: "must be a letter then up to 63 letters, digits, '_', '/' or '.'" })
        .describe(
          "JSON-RPC method name: a letter, then up to 63 letters, digits, _, / or . Only on jsonrpc or a2a APIs; under a2a write the A2A 1.0 name (SendMessage, not message/send).",
        ),
      a2a_operation: z
        .enum(["approve", "reject"], { message: "must be approve or reject" })
        .describe("An A2A message that approves or rejects an approval. Only with protocol a2a; with rpc_method it must be SendMessage or SendStreamingMessage."),
    },
    { message: "must be a mapping" },
  )
  .partial()
  .meta({
    id: "operationEntry",
    description:
      "An operation: used in allowed_operations, denied_operations and approval.required_for.operations. Needs operationId, path, or (on JSON-RPC APIs) rpc_method or a2a_operation. Every key given must match the call.",
    minProperties: 1,
    anyOf: OPERATION_ENTRY_NAMES,
  });

export type OperationEntry = z.output<typeof operationEntrySchema>;

const approvalRuleSchema = z
  .strictObject(
    {
      required_for: z
        .strictObject(
          {
            methods: z
              .union([everyMethod, methodList], { message: 'must be a list of methods or ["*"]' })
              .describe('Methods gated, or ["*"] for every method.'),
            operations: z
              .array(operationEntrySchema, { message: "must be a list" })
              .min(1, { message: "must not be empty" })
              .describe("Operations gated (matched like denials)."),
          },
          { message: "must be a mapping with methods and/or operations" },
        )
        .partial()
        .meta({ minProperties: 1, description: "The calls this rule gates: by method and/or by operation." }),
      approvers: z
        .array(
          z.string({ message: "must be text" }).regex(APPROVER, { message: "must be requester or role:<name> (1-256 characters, no spaces or commas)" }),
          { message: "must be a list" },
        )
        .min(1, { message: "must not be empty" })
        .describe("Who may decide: requester (the person who started the run) and/or role:<name> (anyone else holding that role)."),
      timeout_s: z
        .number({ message: "must be a whole number" })
        .int({ message: "must be a whole number" })
        .min(30, { message: "must be at least 30" })
        .max(86400, { message: "must be at most 86400" })
        .default(900)
        .describe("Seconds to wait for a decision; expiry rejects the call."),
      // Any text parses, so document.ts can say that step_up is reserved; editors get the two values.
      decide_with: z
        .string({ message: "must be direct or relayed" })
        .meta({ enum: ["direct", "relayed"] })
        .default("direct")
        .describe(
          "direct: the person decides with their own credentials. relayed: a listed agent may deliver the requester's decision (needs requester in approvers and relayers). step_up is reserved and refused.",
        ),
      // Checked by document.ts with decide_with (which makes relayers required or refused).
      relayers: z
        .array(z.string({ message: "must be text" }).meta({ pattern: RELAYER.source }), { message: "must be a list" })
        .meta({ minItems: 1, description: "Agent (actor) ids that may relay the requester's decision. Required with decide_with relayed, refused otherwise." }),
    },
    { message: "must be a mapping" },
  )
  .partial({ relayers: true })
  .meta({
    id: "approvalRule",
    description:
      "Calls that wait for a person's decision (spec 2.7). The first rule in file order that covers a call gates it; a call that could belong to rules with different approvers is refused. Approval never widens access.",
    allOf: APPROVAL_RULES,
  });

export type ApprovalRuleInput = z.output<typeof approvalRuleSchema>;

const positiveInt = z.number({ message: "must be a whole number" }).int({ message: "must be a whole number" }).min(1, { message: "must be at least 1" });

export const apiSchema = z
  .strictObject(
    {
      description: text(300)
        .regex(NO_CTRL, { message: "must not contain control characters" })
        .describe("What the API is for: 1-300 characters, no control characters."),
      protocol: z
        .enum(["http", "jsonrpc", "a2a"], { message: "must be http, jsonrpc or a2a" })
        .default("http")
        .describe("http (default); jsonrpc and a2a judge each POST by the JSON-RPC request in its body."),
      a2a: z
        .strictObject(
          {
            // document.ts checks the path (with protocol a2a only, so the message can say why).
            path: z
              .string({ message: "must be a path" })
              .meta({ minLength: 1, pattern: "^/[^{}]*$", description: "The peer's literal JSON-RPC endpoint path (no {placeholders})." }),
          },
          { message: "must be a mapping with path" },
        )
        .describe("Required with protocol a2a, invalid otherwise."),
      base_url_env: envName.describe("The environment variable holding the API's base URL (an absolute http(s) URL; a path prefix is kept)."),
      auth: z
        .enum(["none", "bearer", "forward", "exchange"], { message: "must be none, bearer, forward or exchange" })
        .describe("none; bearer (Authorization: Bearer $token_env); forward (the caller's own credential); exchange (a token exchanged for the caller's, RFC 8693)."),
      token_env: envName.describe("The environment variable holding the bearer token. Required with auth bearer, invalid otherwise."),
      forward_header: z
        .string({ message: "must be a header name" })
        .regex(HEADER_NAME, { message: "must be a header name" })
        .describe("The header carrying the credential (default Authorization). Only with auth forward or exchange."),
      forward_audience: noSpaceCommaCtrl(256).describe("auth forward only: forward the caller's verified token when its aud names this audience."),
      exchange: z
        .strictObject(
          {
            audience: noSpaceCommaCtrl(256).describe("The audience the exchanged token is for."),
            scope: z
              .string({ message: "must be text" })
              .regex(SCOPE, { message: "must be scope tokens separated by single spaces (RFC 6749)" })
              .describe("Scopes separated by single spaces (RFC 6749 scope tokens)."),
            resource: z
              .string({ message: "must be an absolute URI" })
              .refine(isAbsoluteUriWithoutFragment, { message: "must be an absolute URI without fragment (RFC 8707)" })
              .meta({ pattern: "^[A-Za-z][A-Za-z0-9+.\\-]*:[^#\\s]+$", description: "An absolute URI without fragment (RFC 8707)." }),
            allow_actorless: z
              .boolean({ message: "must be true or false" })
              .default(false)
              .describe("When false (default), an exchanged token that names no actor, or cannot be read as a JWT, is refused and nothing is sent."),
          },
          { message: "must be a mapping" },
        )
        .partial({ scope: true, resource: true })
        .describe("Token exchange settings. Required with auth exchange, invalid otherwise."),
      allowed_methods: z
        .union([z.enum(["read-only", "read-write"]), everyMethod, methodList], { message: 'must be a list of methods, ["*"], read-only or read-write' })
        .describe(
          'Required; no default access. A list of methods (any case), ["*"] alone, or the shorthand read-only (GET, HEAD) or read-write (GET, HEAD, POST, PUT, PATCH, DELETE). JSON-RPC APIs allow GET, POST, HEAD only.',
        ),
      allowed_operations: z
        .array(operationEntrySchema, { message: "must be a list" })
        .min(1, { message: "must not be empty (omit the key)" })
        .describe("When present, a call must match an entry (every key the entry pins). An empty list is refused: omit the key."),
      denied_operations: z.array(operationEntrySchema, { message: "must be a list" }).describe("Calls refused whatever else allows them; denials always win."),
      openapi: z
        .string({ message: "must be a file path" })
        .min(1)
        .describe("The API's OpenAPI file, relative to the project root; declared calls are checked against it."),
      timeouts_ms: z
        .strictObject(
          { connect: positiveInt.default(2000).describe("Default 2000."), read: positiveInt.default(5000).describe("Default 5000.") },
          { message: "must be a mapping with connect and read" },
        )
        .describe("Connect and read timeouts in milliseconds."),
      pagination: z
        .strictObject(
          {
            page_size_param: z
              .string({ message: "must be a query parameter name" })
              .regex(/^[A-Za-z0-9_.\-[\]]{1,64}$/, { message: "must be a query parameter name" })
              .describe("The query parameter naming the page size."),
            max_page_size: positiveInt.describe("The largest page size sent."),
          },
          { message: "must be a mapping with page_size_param and max_page_size" },
        )
        .describe("Caps the page-size query parameter in every spelling and shape of the query. Both keys required."),
      limits: z
        .strictObject(
          {
            max_calls_per_run: positiveInt.describe("Calls to this API in one run."),
            rate_per_minute: positiveInt.describe("A token bucket of calls per minute."),
            max_response_bytes: positiveInt.max(MAX_RESPONSE_BYTES, { message: `must be at most ${MAX_RESPONSE_BYTES}` }).describe("Caps each answer's body; beyond it the call fails."),
          },
          { message: "must be a mapping" },
        )
        .partial()
        .refine((l) => Object.keys(l).length > 0, { message: "must set at least one of max_calls_per_run, rate_per_minute, max_response_bytes" })
        .meta({ minProperties: 1, description: "At least one key; counted per process, just before sending." }),
      approval: z
        .union([approvalRuleSchema, z.array(approvalRuleSchema).min(1, { message: "must not be empty" })], {
          message: "must be a rule or a non-empty list of rules",
        })
        .describe("One approval rule, or a non-empty list of rules (spec 2.7)."),
    },
    { message: "must be a mapping" },
  )
  .partial({
    description: true,
    a2a: true,
    token_env: true,
    forward_header: true,
    forward_audience: true,
    exchange: true,
    allowed_operations: true,
    denied_operations: true,
    openapi: true,
    timeouts_ms: true,
    pagination: true,
    limits: true,
    approval: true,
  })
  .meta({ id: "api", description: "One API: where it is, how to authenticate, and what may be called.", allOf: API_RULES });

export type ApiInput = z.output<typeof apiSchema>;

export const documentSchema = z.strictObject(
  {
    apis: z
      .record(z.string(), z.unknown(), { message: "must be a mapping of API names" })
      .refine((r) => Object.keys(r).length > 0, { message: "must name at least one API" }),
  },
  { message: "must be a mapping with the one key apis" },
);

function isAbsoluteUriWithoutFragment(s: string): boolean {
  if (s.includes("#") || /\s/.test(s)) return false;
  try {
    return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(s) && new URL(s).protocol !== "";
  } catch {
    return false;
  }
}
