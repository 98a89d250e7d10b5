/**
 * The outbound API policy document (spec 2.6, 2.7) as zod schemas: strict objects at every
 * level (unknown keys are errors), field rules here, rules between fields in document.ts.
 * schemas/api-policy.schema.json is the editor-facing twin, kept in step by a test.
 */
import { z } from "zod";

export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

const NO_CTRL = /^[^\u0000-\u001f\u007f-\u009f]*$/;
const NO_SPACE_COMMA_CTRL = /^[^\s,\u0000-\u001f\u007f]+$/;
export const API_NAME = /^[a-z][a-z0-9_]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const RPC_METHOD = /^[A-Za-z][A-Za-z0-9_/.]{0,63}$/;
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

const method = z
  .string({ message: "must be an HTTP method" })
  .transform((m) => m.toUpperCase())
  .refine((m): m is HttpMethod => (HTTP_METHODS as readonly string[]).includes(m), {
    message: `must be one of ${HTTP_METHODS.join(", ")}`,
  });

const text = (max: number) =>
  z
    .string({ message: "must be text" })
    .min(1, { message: "must not be empty" })
    .max(max, { message: `must be at most ${max} characters` });

export const operationEntrySchema = z.strictObject(
  {
    operationId: z.string({ message: "must be text" }).regex(/^\S+$/, { message: "must be a label without spaces" }).max(256),
    path: z.string({ message: "must be a path" }),
    methods: z.array(method, { message: "must be a list of methods" }).min(1, { message: "must not be empty" }),
    rpc_method: z.string({ message: "must be text" }).regex(RPC_METHOD, {
      message: "must be a letter then up to 63 letters, digits, '_', '/' or '.'",
    }),
    a2a_operation: z.enum(["approve", "reject"], { message: "must be approve or reject" }),
  },
  { message: "must be a mapping" },
).partial();

export type OperationEntry = z.output<typeof operationEntrySchema>;

const approvalRuleSchema = z.strictObject(
  {
    required_for: z
      .strictObject(
        {
          methods: z.union([z.tuple([z.literal("*")]), z.array(method).min(1, { message: "must not be empty" })], {
            message: "must be a list of methods or [\"*\"]",
          }),
          operations: z.array(operationEntrySchema, { message: "must be a list" }).min(1, { message: "must not be empty" }),
        },
        { message: "must be a mapping with methods and/or operations" },
      )
      .partial(),
    approvers: z
      .array(
        z.string({ message: "must be text" }).refine((a) => a === "requester" || (/^role:/.test(a) && NO_SPACE_COMMA_CTRL.test(a.slice(5)) && a.length - 5 <= 256), {
          message: "must be requester or role:<name> (1-256 characters, no spaces or commas)",
        }),
        { message: "must be a list" },
      )
      .min(1, { message: "must not be empty" }),
    timeout_s: z
      .number({ message: "must be a whole number" })
      .int({ message: "must be a whole number" })
      .min(30, { message: "must be at least 30" })
      .max(86400, { message: "must be at most 86400" })
      .default(900),
    decide_with: z.string({ message: "must be direct or relayed" }).default("direct"),
    relayers: z.array(z.string({ message: "must be text" }), { message: "must be a list" }),
  },
  { message: "must be a mapping" },
).partial({ relayers: true });

export type ApprovalRuleInput = z.output<typeof approvalRuleSchema>;

const positiveInt = z.number({ message: "must be a whole number" }).int({ message: "must be a whole number" }).min(1, { message: "must be at least 1" });

export const apiSchema = z
  .strictObject(
    {
      description: text(300).regex(NO_CTRL, { message: "must not contain control characters" }),
      protocol: z.enum(["http", "jsonrpc", "a2a"], { message: "must be http, jsonrpc or a2a" }).default("http"),
      a2a: z.strictObject({ path: z.string({ message: "must be a path" }) }, { message: "must be a mapping with path" }),
      base_url_env: z.string({ message: "must be an environment variable name" }).regex(ENV_NAME, { message: "must be an environment variable name" }),
      auth: z.enum(["none", "bearer", "forward", "exchange"], { message: "must be none, bearer, forward or exchange" }),
      token_env: z.string({ message: "must be an environment variable name" }).regex(ENV_NAME, { message: "must be an environment variable name" }),
      forward_header: z.string({ message: "must be a header name" }).regex(HEADER_NAME, { message: "must be a header name" }),
      forward_audience: text(256).regex(NO_SPACE_COMMA_CTRL, { message: "must have no spaces, commas or control characters" }),
      exchange: z.strictObject(
        {
          audience: text(256).regex(NO_SPACE_COMMA_CTRL, { message: "must have no spaces, commas or control characters" }),
          scope: z.string({ message: "must be text" }).regex(SCOPE, { message: "must be scope tokens separated by single spaces (RFC 6749)" }),
          resource: z.string({ message: "must be an absolute URI" }).refine(isAbsoluteUriWithoutFragment, { message: "must be an absolute URI without fragment (RFC 8707)" }),
          allow_actorless: z.boolean({ message: "must be true or false" }).default(false),
        },
        { message: "must be a mapping" },
      ).partial({ scope: true, resource: true }),
      allowed_methods: z.union(
        [
          z.enum(["read-only", "read-write"]),
          z.tuple([z.literal("*")]),
          z.array(method).min(1, { message: "must not be empty" }),
        ],
        { message: 'must be a list of methods, ["*"], read-only or read-write' },
      ),
      allowed_operations: z.array(operationEntrySchema, { message: "must be a list" }).min(1, { message: "must not be empty (omit the key)" }),
      denied_operations: z.array(operationEntrySchema, { message: "must be a list" }),
      openapi: z.string({ message: "must be a file path" }).min(1),
      timeouts_ms: z.strictObject({ connect: positiveInt.default(2000), read: positiveInt.default(5000) }, { message: "must be a mapping with connect and read" }),
      pagination: z.strictObject(
        {
          page_size_param: z.string({ message: "must be a query parameter name" }).regex(/^[A-Za-z0-9_.\-[\]]{1,64}$/, { message: "must be a query parameter name" }),
          max_page_size: positiveInt,
        },
        { message: "must be a mapping with page_size_param and max_page_size" },
      ),
      limits: z
        .strictObject(
          {
            max_calls_per_run: positiveInt,
            rate_per_minute: positiveInt,
            max_response_bytes: positiveInt.max(67108864, { message: "must be at most 67108864" }),
          },
          { message: "must be a mapping" },
        )
        .partial()
        .refine((l) => Object.keys(l).length > 0, { message: "must set at least one of max_calls_per_run, rate_per_minute, max_response_bytes" }),
      approval: z.union([approvalRuleSchema, z.array(approvalRuleSchema).min(1, { message: "must not be empty" })], {
        message: "must be a rule or a non-empty list of rules",
      }),
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
  });

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
