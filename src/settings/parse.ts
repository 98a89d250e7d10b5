/**
 * parseSettings(record) -> Settings: the only place the environment is read. Every variable is
 * checked, then the rules between variables; all problems are reported at once in one
 * SettingsError, never one at a time. Messages name variables and rules, never values.
 */
import { SettingsError, type SettingsProblem } from "../errors.js";
import { settingsShape, type RawSettings } from "./schema.js";
import { isLoopbackHost } from "./fields.js";

export interface Settings extends RawSettings {
  /** `APP_ENV` is exactly `dev`. */
  readonly dev: boolean;
  readonly logFormat: "json" | "text";
  readonly tracingEnabled: boolean;
  /** Startup notes worth a log line (not errors). */
  readonly notes: readonly string[];
  /** `RUNTIME`, else detected (see selectedRuntime). */
  readonly runtime: "standalone" | "graph-server";
}

type Env = Readonly<Record<string, string | undefined>>;

export function parseSettings(env: Env): Settings {
  const problems: SettingsProblem[] = [];
  const values: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(settingsShape)) {
    const result = (schema as { safeParse(v: unknown): { success: boolean; data?: unknown; error?: { issues: { message: string }[] } } }).safeParse(env[key]);
    if (result.success) values[key] = result.data;
    else problems.push({ variable: key, message: result.error?.issues[0]?.message ?? "is invalid" });
  }
  const raw = values as unknown as RawSettings;
  const bad = new Set(problems.map((p) => p.variable));
  const ok = (...keys: string[]) => keys.every((k) => !bad.has(k));
  const dev = raw.APP_ENV === "dev";
  const add = (variable: string, message: string) => problems.push({ variable, message });

  const openaiLike = (p: string | undefined) => p === "openai" || p === "openai-compatible";
  if (ok("MODEL_PROVIDER", "MODEL_USE_RESPONSES_API") && raw.MODEL_USE_RESPONSES_API !== undefined && !openaiLike(raw.MODEL_PROVIDER))
    add("MODEL_USE_RESPONSES_API", "is only for MODEL_PROVIDER openai or openai-compatible");
  if (ok("MODEL_PROVIDER", "MODEL_REASONING_EFFORT") && raw.MODEL_REASONING_EFFORT !== undefined && !openaiLike(raw.MODEL_PROVIDER))
    add("MODEL_REASONING_EFFORT", "is only for MODEL_PROVIDER openai or openai-compatible");
  const judgeProvider = raw.JUDGE_PROVIDER ?? raw.MODEL_PROVIDER;
  if (ok("JUDGE_PROVIDER", "MODEL_PROVIDER", "JUDGE_USE_RESPONSES_API") && raw.JUDGE_USE_RESPONSES_API !== undefined && !openaiLike(judgeProvider))
    add("JUDGE_USE_RESPONSES_API", "is only for an openai or openai-compatible judge");
  if (ok("JUDGE_PROVIDER", "MODEL_PROVIDER", "JUDGE_REASONING_EFFORT") && raw.JUDGE_REASONING_EFFORT !== undefined && !openaiLike(judgeProvider))
    add("JUDGE_REASONING_EFFORT", "is only for an openai or openai-compatible judge");
  if (ok("CHECKPOINTER", "SQLDB_DSN") && raw.CHECKPOINTER === "sql" && !raw.SQLDB_DSN)
    add("SQLDB_DSN", "is required when CHECKPOINTER is sql");
  // The DSN holds a password: a bad one is named, never shown.
  if (ok("SQLDB_DSN") && raw.SQLDB_DSN && !isPostgresUrl(raw.SQLDB_DSN))
    add("SQLDB_DSN", "is not a postgres:// or postgresql:// URL with a host");
  else if (ok("SQLDB_DSN") && raw.SQLDB_DSN && !SSL_MODES.has(new URL(raw.SQLDB_DSN).searchParams.get("sslmode") ?? "disable"))
    add("SQLDB_DSN", "has an sslmode other than disable, allow, prefer, require, verify-ca or verify-full");
  if (ok("DB_POOL_MIN_SIZE", "DB_POOL_MAX_SIZE") && raw.DB_POOL_MIN_SIZE > raw.DB_POOL_MAX_SIZE)
    add("DB_POOL_MIN_SIZE", "must not exceed DB_POOL_MAX_SIZE");
  if (ok("AUTH_JWT_JWKS_URL", "AUTH_JWT_PUBLIC_KEY") && raw.AUTH_JWT_JWKS_URL && raw.AUTH_JWT_PUBLIC_KEY)
    add("AUTH_JWT_PUBLIC_KEY", "set AUTH_JWT_JWKS_URL or AUTH_JWT_PUBLIC_KEY, not both");
  if (ok("AUTH_JWT_SECRET") && raw.AUTH_JWT_SECRET !== undefined && new TextEncoder().encode(raw.AUTH_JWT_SECRET).length < 32)
    add("AUTH_JWT_SECRET", "must be at least 32 bytes");
  if (ok("AUTH_JWT_ALGORITHMS", "AUTH_JWT_ALLOW_HS") && !raw.AUTH_JWT_ALLOW_HS && raw.AUTH_JWT_ALGORITHMS.some((a) => a.startsWith("HS")))
    add("AUTH_JWT_ALGORITHMS", "lists an HS algorithm but AUTH_JWT_ALLOW_HS is not true");
  if (ok("AUTH_JWT_JWKS_URL", "AUTH_JWT_ALLOW_HTTP_JWKS") && raw.AUTH_JWT_JWKS_URL && !dev && !raw.AUTH_JWT_ALLOW_HTTP_JWKS && !secureOrLoopback(raw.AUTH_JWT_JWKS_URL))
    add("AUTH_JWT_JWKS_URL", "must be https outside dev unless loopback or AUTH_JWT_ALLOW_HTTP_JWKS is true");
  if (ok("TOKEN_EXCHANGE_URL", "TOKEN_EXCHANGE_ALLOW_HTTP") && raw.TOKEN_EXCHANGE_URL && !dev && !raw.TOKEN_EXCHANGE_ALLOW_HTTP && !secureOrLoopback(raw.TOKEN_EXCHANGE_URL))
    add("TOKEN_EXCHANGE_URL", "must be https outside dev unless loopback or TOKEN_EXCHANGE_ALLOW_HTTP is true");

  // Under AUTH_POLICY=jwt, what the policy cannot do without is named by the policy once the
  // settings parse (spec 5: under dev the service starts and answers 503). Beside other bad
  // variables it is named with them, outside dev, so an operator mends everything at once.
  // A variable already named (set, but to a bad value) is not named again as missing.
  if (problems.length > 0 && !dev && raw.AUTH_POLICY === "jwt" && ok("AUTH_POLICY", "AUTH_JWT_ALGORITHMS", "AUTH_JWT_AUDIENCE"))
    for (const p of jwtVariableProblems(raw, dev)) if (!p.variable.split(" or ").some((v) => problems.some((q) => q.variable === v))) problems.push(p);

  if (problems.length > 0) throw new SettingsError(problems);

  const notes: string[] = [];
  const tracing = raw.TRACING_ENABLED?.trim().toLowerCase();
  const tracingEnabled = tracing === "true" || tracing === "yes" || tracing === "1";
  if (raw.TRACING_ENABLED !== undefined && !tracingEnabled)
    notes.push("TRACING_ENABLED is not true, yes or 1: tracing stays off");

  return Object.freeze({
    ...raw,
    dev,
    logFormat: raw.LOG_FORMAT ?? (dev ? "text" : "json"),
    tracingEnabled,
    notes,
    runtime: raw.RUNTIME ?? selectedRuntime(env),
  });
}

/**
 * AUTH_POLICY=jwt (spec 5.3): the variables the policy cannot do without, for the algorithms it
 * allows, and outside dev the issuer and the audience. The jwt policy refuses to start on them
 * (outside dev) or answers 503 (under dev); parseSettings names them beside other bad variables.
 */
export function jwtVariableProblems(
  s: Pick<RawSettings, "AUTH_JWT_ALGORITHMS" | "AUTH_JWT_JWKS_URL" | "AUTH_JWT_PUBLIC_KEY" | "AUTH_JWT_SECRET" | "AUTH_JWT_ISSUER" | "AUTH_JWT_AUDIENCE">,
  dev: boolean,
): SettingsProblem[] {
  const problems: SettingsProblem[] = [];
  const hs = s.AUTH_JWT_ALGORITHMS.some((a) => a.startsWith("HS"));
  const asymmetric = s.AUTH_JWT_ALGORITHMS.some((a) => !a.startsWith("HS"));
  // Either one will do: named together, as the line a person reads says.
  if (asymmetric && !s.AUTH_JWT_JWKS_URL && !s.AUTH_JWT_PUBLIC_KEY) problems.push({ variable: "AUTH_JWT_JWKS_URL or AUTH_JWT_PUBLIC_KEY", message: "is required" });
  if (hs && !s.AUTH_JWT_SECRET) problems.push({ variable: "AUTH_JWT_SECRET", message: "is required for HS algorithms" });
  if (!dev && !s.AUTH_JWT_ISSUER) problems.push({ variable: "AUTH_JWT_ISSUER", message: "is required outside dev" });
  if (!dev && s.AUTH_JWT_AUDIENCE.length === 0) problems.push({ variable: "AUTH_JWT_AUDIENCE", message: "is required outside dev" });
  return problems;
}

/**
 * The runtime (spec 1): RUNTIME when it names one, else graph-server inside the LangGraph Agent
 * Server, which sets LANGGRAPH_API_URL (the JS `langgraphjs dev` server) or
 * LANGSMITH_LANGGRAPH_API_VARIANT (the licensed server) for the process that loads the graph, or
 * when GRAPHSERVER_URL names such a server; else standalone. Read from the record passed in, like
 * every setting (the Node entry asks before createApp, to pick its server).
 */
export function selectedRuntime(env: Env): "standalone" | "graph-server" {
  if (env.RUNTIME === "standalone" || env.RUNTIME === "graph-server") return env.RUNTIME;
  const set = (key: string) => (env[key] ?? "") !== "";
  return set("LANGGRAPH_API_URL") || set("LANGSMITH_LANGGRAPH_API_VARIANT") || set("GRAPHSERVER_URL") ? "graph-server" : "standalone";
}

const SSL_MODES = new Set(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]);

function isPostgresUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const u = new URL(value);
  return (u.protocol === "postgres:" || u.protocol === "postgresql:") && u.hostname !== "";
}

function secureOrLoopback(value: string): boolean {
  const u = new URL(value);
  if (u.protocol === "https:") return true;
  return isLoopbackHost(u.hostname);
}
