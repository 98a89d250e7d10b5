/**
 * Every environment variable the service reads, in one zod object. Some are parsed and validated
 * although nothing acts on them (graph-server settings, a few A2A knobs), so a typo stops
 * startup rather than being silently ignored.
 */
import { z } from "zod";
import { bool, boolWithDefault, csv, fraction, int, oneOf, rawString, text, textWithDefault, url } from "./fields.js";

const ROLE_LIST_RULE = { message: "role names must not contain spaces" };
const roleList = () => csv().refine((roles) => roles.every((r) => !/\s/.test(r)), ROLE_LIST_RULE);

const JWT_ALGORITHMS = new Set([
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "HS256",
  "HS384",
  "HS512",
]);

export const settingsShape = {
  // 2.10 service
  APP_ENV: text(),
  HOST: textWithDefault("127.0.0.1"),
  PORT: int(8000, 0, 65535),
  RUNTIME: oneOf(["standalone", "graph-server"] as const),
  AGENT_VERSION: textWithDefault("0.1.0"),

  // 2.10 model
  MODEL_PROVIDER: oneOf(["openai", "anthropic", "gemini", "openai-compatible", "fake"] as const, "openai"),
  MODEL_NAME: text(),
  OPENAI_API_KEY: text(),
  ANTHROPIC_API_KEY: text(),
  GEMINI_API_KEY: text(),
  MODEL_API_KEY: text(),
  OPENAI_BASE_URL: url(),
  MODEL_TIMEOUT_S: int(60, 0, 3600),
  MODEL_MAX_RETRIES: int(2, 0, 10),
  MODEL_REASONING_EFFORT: oneOf(["none", "minimal", "low", "medium", "high", "xhigh"] as const),
  MODEL_USE_RESPONSES_API: bool(),
  JUDGE_PROVIDER: oneOf(["openai", "anthropic", "gemini", "openai-compatible", "fake"] as const),
  JUDGE_MODEL_NAME: text(),
  JUDGE_BASE_URL: url(),
  JUDGE_API_KEY: text(),
  JUDGE_REASONING_EFFORT: oneOf(["none", "minimal", "low", "medium", "high", "xhigh"] as const),
  JUDGE_USE_RESPONSES_API: bool(),
  RESPONSE_FORMAT_STRATEGY: oneOf(["auto", "provider", "tool"] as const, "auto"),
  RESPONSE_SCHEMA_PATH: text(),

  // CONTRACT 7: a tool for each operation of the policy APIs' OpenAPI files that the policy allows
  TOOLS_FROM_OPENAPI: boolWithDefault(false),

  // 2.10 persistence
  CHECKPOINTER: oneOf(["memory", "sql"] as const, "memory"),
  SQLDB_DSN: text(),
  DB_POOL_MIN_SIZE: int(1, 0, 1000),
  DB_POOL_MAX_SIZE: int(10, 1, 1000),
  DATABASE_URI: text(),
  CACHE_URI: text(),
  RETENTION_DAYS: int(0, 0, 36500),

  // 2.10 A2A
  APP_URL: url(),
  A2A_NAME: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, { message: "must be 1-63 letters, digits, '.', '_' or '-'" })
      .default("app"),
  ),
  A2A_DESCRIPTION: text(),
  A2A_TASK_TTL_S: int(3600, 0),
  A2A_ORIGIN_MAX_CHARS: int(4000, 0, 1_000_000),
  A2A_FORWARD_ORIGIN: oneOf(["auto", "off"] as const, "auto"),
  A2A_CARD_TTL_S: int(300, 0),
  A2A_REPLY_MAX_CHARS: int(6000, 1, 1_000_000),
  A2A_DELEGATED_MENTIONS: oneOf(["origin", "refuse", "request"] as const, "origin"),
  A2A_CALLER_NOTE: oneOf(["on", "off"] as const, "on"),

  // 5 authentication
  AUTH_POLICY: oneOf(["shared-bearer", "jwt", "custom"] as const, "shared-bearer"),
  API_KEY: text(),
  AUTH_JWT_JWKS_URL: url(),
  AUTH_JWT_PUBLIC_KEY: text(),
  AUTH_JWT_ISSUER: text(),
  AUTH_JWT_AUDIENCE: csv(),
  AUTH_JWT_SECRET: text(),
  AUTH_JWT_ROLES_CLAIM: textWithDefault("roles"),
  AUTH_JWT_ACTOR_CLAIM: rawString().default("act"),
  AUTH_JWT_CLIENT_CLAIM: textWithDefault("azp"),
  AUTH_JWT_DIRECT_CLIENTS: csv(),
  AUTH_JWT_ALGORITHMS: csv()
    .transform((list) => (list.length === 0 ? ["RS256", "ES256"] : list))
    .refine((list) => list.every((a) => JWT_ALGORITHMS.has(a)), {
      message: `must list algorithms among ${[...JWT_ALGORITHMS].join(", ")}`,
    }),
  AUTH_JWT_ALLOW_HS: boolWithDefault(false),
  AUTH_JWT_PRINCIPAL_CLAIM: textWithDefault("sub"),
  AUTH_JWT_CLOCK_SKEW_S: int(60, 0, 600),
  AUTH_JWT_JWKS_CACHE_S: int(300, 1, 86400),
  AUTH_JWT_ALLOW_HTTP_JWKS: boolWithDefault(false),
  AUTH_CUSTOM_MODULE: text(),
  AUTH_FORWARD_HEADERS: rawString().default("authorization,cookie"),
  GRAPHSERVER_URL: url(),
  AUTH_READ_ACROSS_ROLES: roleList(),
  AUTH_ADMIN_ROLES: roleList(),
  AUTH_ALLOWED_ACTORS: csv(),
  AUTH_DELEGATED_ROLES: roleList(),
  AUTH_MAX_DELEGATION_DEPTH: int(3, 1, 8),
  PRINCIPAL_HASH_SALT: text(),
  METRICS_ENABLED: boolWithDefault(true),
  METRICS_TOKEN: text(),
  CORS_ALLOWED_ORIGINS: csv().refine((list) => list.every((o) => o === "*" || /^https?:\/\/[^/\s]+$/.test(o)), {
    message: "must be a comma list of origins such as https://app.example.com",
  }),

  // 5.8 token exchange
  TOKEN_EXCHANGE_URL: url(),
  TOKEN_EXCHANGE_CLIENT_ID: text(),
  TOKEN_EXCHANGE_CLIENT_SECRET: text(),
  TOKEN_EXCHANGE_CLIENT_AUTH: oneOf(["client_secret_basic", "client_secret_post"] as const, "client_secret_basic"),
  TOKEN_EXCHANGE_SUBJECT_TOKEN_TYPE: oneOf(
    ["urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:jwt"] as const,
    "urn:ietf:params:oauth:token-type:access_token",
  ),
  TOKEN_EXCHANGE_TIMEOUT_MS: int(2000, 100, 60000),
  TOKEN_EXCHANGE_MAX_TTL_S: int(300, 1, 300),
  TOKEN_EXCHANGE_FAILURE_TTL_S: int(10, 1, 300),
  TOKEN_EXCHANGE_ALLOW_HTTP: boolWithDefault(false),
  TOKEN_EXCHANGE_CACHE_MAX: int(10000, 1, 10_000_000),

  // 6.3 logs, 6.4 tracing
  LOG_FORMAT: oneOf(["json", "text"] as const),
  LOG_LEVEL: z.preprocess(
    (v) => (typeof v === "string" && v !== "" ? v.toUpperCase() : undefined),
    z
      .enum(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], {
        message: "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
      })
      .default("INFO"),
  ),
  LOG_JSON: bool(),
  TRACING_ENABLED: text(),
  TRACEVENDOR_API_KEY: text(),
  TRACEVENDOR_PROJECT: text(),
  TRACEVENDOR_ENDPOINT: url(),
  OTEL_EXPORTER_OTLP_ENDPOINT: url(),
  OTEL_SERVICE_NAME: text(),
  // The standard OTLP exporter and batch processor variables the runtime entries honour (CONTRACT
  // 7); parsed here so a bad value stops startup with the others. grpc is not offered.
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(),
  OTEL_EXPORTER_OTLP_PROTOCOL: oneOf(["http/protobuf", "http/json"] as const, "http/protobuf"),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: oneOf(["http/protobuf", "http/json"] as const),
  OTEL_EXPORTER_OTLP_HEADERS: text(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: text(),
  OTEL_EXPORTER_OTLP_TIMEOUT: int(10_000, 1, 600_000),
  OTEL_BSP_SCHEDULE_DELAY: int(5000, 0, 3_600_000),
  OTEL_BSP_EXPORT_TIMEOUT: int(30_000, 1, 600_000),
  OTEL_BSP_MAX_QUEUE_SIZE: int(2048, 1, 1_000_000),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: int(512, 1, 1_000_000),
  OTEL_RESOURCE_ATTRIBUTES: text(),
  // Sampling as the OpenTelemetry SDK reads it (the remote samplers jaeger_remote and xray are not offered).
  OTEL_TRACES_SAMPLER: oneOf(["parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio", "always_on", "always_off", "traceidratio"] as const, "parentbased_always_on"),
  OTEL_TRACES_SAMPLER_ARG: fraction(1),
  TRACE_CAPTURE: oneOf(["metadata", "full"] as const, "metadata"),
  PROPAGATE_TRACE_HEADERS: z.preprocess(
    (v) => (typeof v === "string" && v !== "" ? v.trim().toLowerCase() : undefined),
    z
      .enum(["peers", "true", "1", "yes", "on", "all", "off", "false", "0", "no"], {
        message: "must be peers, all or off",
      })
      .default("peers")
      .transform((v): "peers" | "all" | "off" =>
        v === "all" ? "all" : ["off", "false", "0", "no"].includes(v) ? "off" : "peers",
      ),
  ),

  // 8 limits
  API_POLICY_PATH: textWithDefault("api-policy.yaml"),
  MAX_REQUEST_BYTES: int(1_048_576, 1, 1_073_741_824),
  MAX_MESSAGE_CHARS: int(32000, 1, 10_000_000),
  MAX_METADATA_KEYS: int(16, 0, 1000),
  MAX_METADATA_VALUE_CHARS: int(256, 1, 100_000),
  RUN_TIMEOUT_S: int(300, 1, 86400),
  RECURSION_LIMIT: int(50, 2, 10000),
  /** The history budget (issue 20): estimated tokens of a thread's newest whole turns sent to the model. */
  MAX_HISTORY_TOKENS: int(64_000, 100, 100_000_000),
  SSE_HEARTBEAT_S: int(15, 1, 3600),

  // runtime entries
  /** Node entry: seconds a shutdown lets runs finish before interrupting them. */
  DRAIN_GRACE_S: int(25, 0, 3600),
} as const;



export const settingsSchema = z.object(settingsShape);

export type RawSettings = z.output<typeof settingsSchema>;
