/**
 * createApp(options): the composition root. Settings -> adapters -> deps -> routes. Only this
 * file and the runtime entries choose adapters; everything below receives ready dependencies.
 */
import { DEFAULT_SYSTEM_PROMPT, DEFAULT_TOOLS } from "./agent/default-agent.js";
import type { Model } from "./agent/model.js";
import { modelFactory } from "./agent/providers/index.js";
import { createAnswerChecker, readResponseSchema, type ResponseSchema } from "./agent/structured.js";
import type { Tool } from "./agent/tools/define.js";
import { addOpenApiTools } from "./agent/tools/openapi/tools.js";
import { addPeerTools, peerCallRefusal, peerTools } from "./a2a/peers/tools.js";
import { type A2AService, createA2AService } from "./a2a/service.js";
import { createApprovalGate, PauseBook } from "./approvals/gate.js";
import { chooseAuthPolicy } from "./auth/choose.js";
import type { CustomAuthPolicy } from "./auth/custom.js";
import { createPrincipalHasher, type PrincipalHasher } from "./auth/hashing.js";
import type { AuthPolicy } from "./auth/policy.js";
import { type Clock, isoTime, systemClock } from "./clock.js";
import type { Tracer } from "@opentelemetry/api";
import { ConfigurationError, isAppError, type SettingsError } from "./errors.js";
import type { PolicyError } from "./policy/document.js";
import { type ReadText, readNamedFile } from "./files.js";
import { buildRouter } from "./http/router.js";
import type { HealthPersistence } from "./http/routes/probes.js";
import { type Ids, randomIds } from "./ids.js";
import { backgroundJob, type BackgroundJob, every } from "./jobs.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createMetrics } from "./observability/metrics.js";
import type { TraceExportFactory } from "./observability/trace-export.js";
import { type AppTraces, startTracing } from "./observability/tracing-setup.js";
import { authCompatibilityProblems } from "./policy/auth-fit.js";
import { createPolicyClient } from "./policy/client.js";
import { tokenExchangerFor } from "./policy/exchange.js";
import type { ApprovalGate } from "./policy/gate.js";
import { preparePolicy } from "./policy/setup.js";
import { type AgentSetup, createRunRegistry, createRuns, LEASE_TIMINGS, type LeaseTimings, type Runs, type RunsContext, threadLeases } from "./runs/index.js";
import { parseSettings, type Settings } from "./settings/parse.js";
import { createMemoryLease } from "./store/memory/lease.js";
import { createMemoryStore } from "./store/memory/store.js";
import type { Store, ThreadLease } from "./store/ports.js";

/** A run record left running is marked ProcessLost this long after its lease expired (spec 3.1). */
const LOST_RUN_GRACE_MS = 60_000;
/** How long a task waits, with every approval it lists decided, before the settling sweep looks at it. */
const STRANDED_AFTER_MS = 30_000;
/** How long close() waits for the writes the runs it stopped left going. */
const CLOSE_WRITES_MS = 3_000;
/** How often settled() looks again. */
const SETTLE_POLL_MS = 20;

export interface CreateAppOptions {
  /** Read as the process environment. No env file is read unless the runtime entry merged one in. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Base for relative paths in the settings; defaults to the current directory. Used by the
   * package entry's file reader (src/runtime/package.ts), which passes `readText`.
   */
  readonly root?: string;
  /** Replaces the default agent's tools. */
  readonly tools?: readonly Tool[];
  /** Replaces the default agent's system prompt. */
  readonly system?: string;
  readonly store?: Store;
  readonly lease?: ThreadLease;
  readonly clock?: Clock;
  readonly ids?: Ids;
  /** Replaces the model chosen by MODEL_PROVIDER. */
  readonly model?: Model;
  /** Where log lines go (one per call); defaults to console.log. */
  readonly logWrite?: (line: string) => void;
  /** A development API key shown prefilled in the playground (APP_ENV=dev only). */
  readonly playgroundKey?: string;
  /**
   * Reads files named by the settings (API_POLICY_PATH, openapi:, RESPONSE_SCHEMA_PATH). The
   * package entry and the Node, Bun and Deno entries pass the host's reader; without one (workerd)
   * no file is read.
   */
  readonly readText?: ReadText;
  /** The API policy document as text, for runtimes without files; wins over API_POLICY_PATH. */
  readonly policyText?: string;
  /** The fetch outbound calls use; defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Holds gated calls for a person; defaults to the built-in approvals. */
  readonly approvalGate?: ApprovalGate;
  /** A custom auth policy (spec 5.4): used whenever given (AUTH_POLICY=custom without one answers 503). */
  readonly authPolicy?: CustomAuthPolicy;
  /** A response schema given as an object (for runtimes without files); wins over RESPONSE_SCHEMA_PATH. */
  readonly responseSchema?: Readonly<Record<string, unknown>>;
  /**
   * The runtime's HOST and PORT do not say where it is reached (the workerd entry sets it): without
   * APP_URL, the A2A card names the origin each request came to instead of `http://HOST:PORT`.
   */
  readonly cardFollowsRequest?: boolean;
  /**
   * The runtime's trace export (src/runtime/tracing.ts on Node, Bun and Deno; worker-tracing.ts
   * on workerd), called once with the settings when TRACING_ENABLED is on.
   */
  readonly traceExport?: TraceExportFactory;
  /**
   * A tracer of the caller's own (tests, an embedder with its own OpenTelemetry setup): used
   * instead of `traceExport` when TRACING_ENABLED is on; its owner flushes and shuts it down.
   */
  readonly tracer?: Tracer;
  /** Internal, for tests: a PostgreSQL schema of its own (created if missing). */
  readonly sqlSchema?: string;
  /** Internal, for tests: how often expired approvals are swept (default 5 s). */
  readonly sweepIntervalMs?: number;
  /**
   * Runs the background jobs on intervals (default true). The workerd entry turns this off and
   * runs `App.jobs` from its cron trigger: an isolate keeps no timers between requests. Off, the
   * policy client also gives each call's deadline its own timer rather than sharing one.
   */
  readonly intervalJobs?: boolean;
  /**
   * A run's timer (its lease renewal and deadline) as one interval of the renewal period rather
   * than a timeout set again each period (default false). The Node entry turns it on: on V8 a
   * timeout that lives a whole period reaches the old generation, and ten thousand waiting runs
   * then leave two thousand a second there; on Bun the repeated timeout measured smaller.
   */
  readonly repeatingRunTimers?: boolean;
  /** Internal, for tests: shorter lease renewal and expiry than the spec's 5 s / 30 s. */
  readonly leaseTimings?: LeaseTimings;
  /**
   * Internal, for the graph-server runtime (src/runtime/graph-server/): the parts it builds the
   * server's auth handler and graph from, so both follow this app's one auth policy and agent.
   */
  readonly onParts?: (parts: AppParts) => void;
  /**
   * Internal, for the graph-server runtime: opens the store and the thread lease from the
   * settings (the server's threads and checkpoints, our own tables beside them). Wins over
   * `store`, `lease` and CHECKPOINTER.
   */
  readonly storage?: (
    settings: Settings,
    context: { readonly clock: Clock; readonly logger: Logger; readonly onHealth: (up: boolean) => void },
  ) => Promise<{ store: Store; lease: ThreadLease; persistence?: HealthPersistence }>;
}

/** What the graph-server runtime reuses of a composed app (see CreateAppOptions.onParts). */
export interface AppParts {
  readonly settings: Settings;
  readonly ids: Ids;
  readonly auth: AuthPolicy;
  readonly hashPrincipal: PrincipalHasher;
  readonly runs: RunsContext;
}

export interface App {
  /** The web-standard handler. */
  fetch(request: Request, env?: unknown, ctx?: unknown): Promise<Response>;
  readonly settings: Settings;
  /** Runs in progress in this process. */
  readonly activeRuns: number;
  /** The background jobs (approval sweep, lost runs, settling A2A tasks, retention, task TTL), for a runtime that runs them itself (intervalJobs: false). */
  readonly jobs: readonly BackgroundJob[];
  /**
   * Resolves once no run is going and no follow-up of one is pending (the A2A tasks settled after
   * a resumed run). workerd cuts a request's I/O when its response and its `ctx.waitUntil` work
   * have ended, and a run's follow-ups come after its stream: the worker hands this to waitUntil.
   */
  settled(): Promise<void>;
  /**
   * The trace export: `flush()` sends what is buffered (on workerd hand it to `ctx.waitUntil`,
   * as flushAfterResponse does); `enabled` is false while tracing is off.
   */
  readonly traces: Pick<AppTraces, "enabled" | "flush">;
  /** Lets runs finish for up to `graceMs`, then interrupts the rest (graceful shutdown). */
  drain(graceMs: number): Promise<void>;
  /** Stops timers, interrupts runs still going, closes pools, then flushes and stops the trace export. */
  close(): Promise<void>;
}

/**
 * What a start that createApp (or a runtime entry's own settings check) refused says: the
 * headline and a line per problem, naming variables and policy places, never values. The Node,
 * Bun and Deno entries print it on stderr, the workerd entry logs it. Undefined for an error that
 * is not one of these (a bug, which the runtime reports as it reports any).
 */
export function startFailureLines(error: unknown): string[] | undefined {
  if (!isAppError(error)) return undefined;
  if (error.code === "invalid_settings")
    return ["The service cannot start: invalid settings.", ...(error as SettingsError).problems.map((p) => `  ${p.variable}: ${p.message}`)];
  if (error.code === "invalid_policy")
    return ["The service cannot start: the API policy has problems.", ...(error as PolicyError).problems.map((p) => `  ${p.place}: ${p.message}`)];
  if (error.code === "configuration") return [`The service cannot start: ${error.message}`];
  return undefined;
}

export async function createApp(options: CreateAppOptions = {}): Promise<App> {
  const settings = parseSettings(options.env ?? {});
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const logger: Logger = createLogger({
    level: settings.LOG_LEVEL,
    format: settings.logFormat,
    write: options.logWrite ?? ((line) => console.log(line)),
    now: () => clock.now(),
  });
  for (const note of settings.notes) logger.info(note);

  const tools = toolsByName(options.tools ?? DEFAULT_TOOLS);
  // The core reads no files itself: the runtime entry or the package entry passes the reader.
  const readText: ReadText = options.readText ?? (async () => undefined);
  const policy = await preparePolicy({
    path: settings.API_POLICY_PATH,
    explicit: options.env?.API_POLICY_PATH !== undefined && options.env.API_POLICY_PATH !== "",
    readText,
    env: options.env ?? {},
    tools: [...tools.values()],
    recursionLimit: settings.RECURSION_LIMIT,
    text: options.policyText,
  });
  for (const warning of policy?.warnings ?? []) logger.warning(warning);
  // Built from the policy, so after it: ask_/status_/cancel_<api> for each protocol a2a API.
  if (policy) addPeerTools(tools, peerTools({ ...policy, settings, clock, logger }));
  // TOOLS_FROM_OPENAPI: one tool per operation of the policy APIs' OpenAPI files the policy allows.
  if (settings.TOOLS_FROM_OPENAPI) addOpenApiTools(tools, policy, logger);

  const outboundFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init));
  const auth = await chooseAuthPolicy(settings, options.authPolicy, { fetch: outboundFetch, clock, ids, logger });
  const compatibility = authCompatibilityProblems(policy?.policy, settings, auth.name);
  if (compatibility.length > 0) {
    if (!settings.dev || settings.runtime === "graph-server") throw new ConfigurationError(`The API policy does not fit the auth policy: ${compatibility.join("; ")}.`);
    for (const problem of compatibility) logger.error(`API policy and auth policy: ${problem}`);
  }

  const responseSchema = await loadResponseSchema(settings, readText, options.responseSchema);
  const metrics = createMetrics();
  const { tracing, traces } = await startTracing({ settings, factory: options.traceExport, tracer: options.tracer, logger, dropped: metrics.spansDropped });
  const { store, lease, persistence } = await chooseStorage(settings, options, { clock, logger, onHealth: (up) => metrics.databaseUp.set(up ? 1 : 0) });
  const hashPrincipal = createPrincipalHasher(settings.PRINCIPAL_HASH_SALT);
  const pauses = new PauseBook();
  const gate = options.approvalGate ?? createApprovalGate({ store, clock, ids, metrics, hashPrincipal, pauses, tracing });
  const exchanger = policy && tokenExchangerFor(policy.policy, settings, { fetch: outboundFetch, clock, logger, metrics, tracing });
  const agent: AgentSetup = {
    model: options.model ? () => options.model! : modelFactory(settings, (input, init) => fetch(input, init)),
    system: options.system ?? DEFAULT_SYSTEM_PROMPT,
    tools,
    responseSchema: responseSchema && { schema: responseSchema, checker: createAnswerChecker(responseSchema), strategy: settings.RESPONSE_FORMAT_STRATEGY },
    // Timers outlive a request wherever the jobs run on intervals: the calls' deadlines share one.
    policyClient:
      policy &&
      createPolicyClient({
        ...policy,
        fetch: outboundFetch,
        clock,
        logger,
        gate,
        exchanger,
        tracing,
        dev: settings.dev,
        sharedDeadlines: options.intervalJobs !== false,
        refusePeer: peerCallRefusal({ ...policy, settings }),
      }),
  };
  checkStructuredStrategy(settings, agent);

  // Work a request leaves going once its response has ended (what follows a resumed run, tasks
  // settled after it, a task's final state stored after its run): tracked, so a runtime that ends
  // a request's I/O with its response can wait for it (settled), and a closing app lets it reach
  // the store.
  const background = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    background.add(work);
    const forget = () => void background.delete(work);
    work.then(forget, forget);
    return work;
  };

  // Distinguishes this process's lease holders and tasks from other replicas'.
  const instanceId = ids.requestId();
  const runsContext: RunsContext = {
    store,
    leases: threadLeases(lease, { instanceId, ids, timings: options.leaseTimings ?? LEASE_TIMINGS }),
    clock,
    ids,
    logger,
    metrics,
    agent,
    limits: {
      runTimeoutS: settings.RUN_TIMEOUT_S,
      recursionLimit: settings.RECURSION_LIMIT,
      historyTokens: settings.MAX_HISTORY_TOKENS,
      dev: settings.dev,
      repeatingTimer: options.repeatingRunTimers === true,
      delegation: { callerNote: settings.A2A_CALLER_NOTE === "on", mentions: settings.A2A_DELEGATED_MENTIONS },
    },
    decisions: { store, clock, metrics, logger, keepDecidedCalls: settings.TRACE_CAPTURE === "full" },
    pauses,
    registry: createRunRegistry(),
    tracing,
    track,
  };
  const runs = createRuns(runsContext);
  options.onParts?.({ settings, ids, auth, hashPrincipal, runs: runsContext });
  const a2a = createA2AService({ settings, store, runs, clock, ids, instanceId, track, structured: responseSchema !== undefined });
  // Awaited by the resumer, whose own follow-up is tracked (runs/resume.ts): nothing to track here.
  runs.onResumed((approval, outcome) => a2a.settle(approval, outcome));
  const router = buildRouter({
    settings,
    auth,
    hashPrincipal,
    store,
    runs,
    a2a,
    ids,
    logger,
    metrics,
    tracing,
    structured: responseSchema !== undefined,
    cardFollowsRequest: options.cardFollowsRequest ?? false,
    playgroundKey: settings.dev ? options.playgroundKey : undefined,
    persistence,
  });

  const jobs = backgroundJobs({ settings, store, runs, a2a, clock, logger, sweepIntervalMs: options.sweepIntervalMs ?? 5_000 });
  const stops = options.intervalJobs === false ? [] : jobs.map(every);

  let closed = false;
  return {
    fetch: (request, env, ctx) => Promise.resolve(router.fetch(request, env as never, ctx as never)),
    settings,
    get activeRuns() {
      return runs.active;
    },
    jobs,
    async settled() {
      // A macrotask first: a run's follow-ups start in the microtasks after its end.
      do await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
      while (runs.active > 0 || background.size > 0);
    },
    traces,
    drain: (graceMs) => runs.drain(graceMs),
    async close() {
      if (closed) return;
      closed = true;
      for (const stop of stops) stop();
      await runs.drain(0);
      // What the runs left to write (their tasks' final states, waiting tasks settled), within a bound.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.allSettled([...background]), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WRITES_MS)))]);
      clearTimeout(timer);
      // After the runs: a call still in flight while they stop keeps its deadline.
      agent.policyClient?.close();
      await store.close();
      // Last: the spans of the runs just ended go out before the export stops.
      await traces.shutdown();
    },
  };
}

/** The jobs every replica runs, on timers or from the runtime's own schedule. */
function backgroundJobs(o: { settings: Settings; store: Store; runs: Runs; a2a: A2AService; clock: Clock; logger: Logger; sweepIntervalMs: number }): BackgroundJob[] {
  const { settings, store, runs, a2a, clock, logger } = o;
  const jobs = [
    backgroundJob(logger, "approval sweep", o.sweepIntervalMs, () => runs.recover()),
    backgroundJob(logger, "marking lost runs", 15_000, () => store.markLostRuns(LOST_RUN_GRACE_MS)),
    // Tasks a resumed run's end should have settled (its write failed, its process died): looked
    // at once they have been still for STRANDED_AFTER_MS, so a run's own settle goes first.
    backgroundJob(logger, "settling A2A tasks", STRANDED_AFTER_MS, () => a2a.settleStranded(isoTime(clock.now() - STRANDED_AFTER_MS), 100)),
  ];
  if (settings.RETENTION_DAYS > 0) jobs.push(backgroundJob(logger, "retention", 3_600_000, () => runs.retention(settings.RETENTION_DAYS), { atStart: true }));
  const ttl = settings.A2A_TASK_TTL_S;
  if (ttl > 0) jobs.push(backgroundJob(logger, "task retention", Math.min(60_000, ttl * 1000), () => store.dropTasksBefore(isoTime(clock.now() - ttl * 1000))));
  return jobs;
}

function toolsByName(list: readonly Tool[]): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  for (const tool of list) {
    if (tools.has(tool.name)) throw new ConfigurationError(`Two tools are named ${tool.name}.`);
    tools.set(tool.name, tool);
  }
  return tools;
}

/**
 * The store and the thread lease: the caller's, else Postgres (CHECKPOINTER=sql, whose leases
 * live in the same database), else memory.
 */
async function chooseStorage(
  settings: Settings,
  options: CreateAppOptions,
  { clock, logger, onHealth }: { clock: Clock; logger: Logger; onHealth: (up: boolean) => void },
): Promise<{ store: Store; lease: ThreadLease; persistence: HealthPersistence }> {
  const persistence = { checkpointer: settings.CHECKPOINTER };
  if (options.storage) {
    const opened = await options.storage(settings, { clock, logger, onHealth });
    return { ...opened, persistence: opened.persistence ?? persistence };
  }
  // Under graph-server the server owns threads and checkpoints: its runtime passes the storage.
  if (settings.runtime === "graph-server")
    throw new ConfigurationError("RUNTIME is graph-server: start the service through its graph-server runtime (npm start with RUNTIME=graph-server), which opens the server's storage.");
  if (!options.store && settings.CHECKPOINTER === "sql") {
    if (options.lease) throw new ConfigurationError("With CHECKPOINTER=sql the thread lease is the database's: do not pass a lease to createApp.");
    // Loaded lazily: the postgres package stays out of every bundle that never uses it.
    const { openPostgres } = await import("./store/postgres/index.js");
    const pg = await openPostgres({
      dsn: settings.SQLDB_DSN!,
      min: settings.DB_POOL_MIN_SIZE,
      max: settings.DB_POOL_MAX_SIZE,
      schema: options.sqlSchema,
      logger,
      onHealth,
    });
    return { ...pg, persistence };
  }
  return { store: options.store ?? createMemoryStore(), lease: options.lease ?? createMemoryLease(clock), persistence };
}

/** "provider" forces the provider's structured output: a model that cannot take the schema stops startup. */
function checkStructuredStrategy(settings: Settings, agent: AgentSetup): void {
  if (!agent.responseSchema || settings.RESPONSE_FORMAT_STRATEGY !== "provider") return;
  let structuredOutput: boolean | undefined;
  try {
    structuredOutput = agent.model().structuredOutput;
  } catch {
    structuredOutput = undefined; // the model is not configured yet: runs will say so
  }
  if (structuredOutput === false)
    throw new ConfigurationError(`RESPONSE_FORMAT_STRATEGY is provider, but MODEL_PROVIDER ${settings.MODEL_PROVIDER} cannot send the response schema.`);
}

/** RESPONSE_SCHEMA_PATH: `none` disables; a named file must exist; the default file may be absent; either must be readable. */
async function loadResponseSchema(settings: Settings, readText: ReadText, given: Readonly<Record<string, unknown>> | undefined): Promise<ResponseSchema | undefined> {
  if (given) return readResponseSchema(JSON.stringify(given), "given to createApp");
  const setting = settings.RESPONSE_SCHEMA_PATH;
  if (setting === "none") return undefined;
  const path = setting ?? "response_schema.json";
  const read = await readNamedFile(readText, path);
  if ("unreadable" in read) throw new ConfigurationError(`RESPONSE_SCHEMA_PATH ${read.unreadable}.`);
  const { text } = read;
  if (text === undefined) {
    if (setting !== undefined) throw new ConfigurationError(`RESPONSE_SCHEMA_PATH names a file that does not exist.`);
    return undefined;
  }
  return readResponseSchema(text, path);
}
