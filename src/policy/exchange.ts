/**
 * Token exchange for `auth: exchange` APIs (spec 5.8, 6.2, 6.3): the caller's verified token is
 * exchanged at the token issuer (RFC 8693, on the wire in exchange-wire.ts) for one the API
 * accepts. The policy client asks just before sending, after the gate and the limits, so the
 * issuer is never called while a request is authenticated nor for a call that is refused anyway.
 *
 * Around each exchange: a least-recently-used cache of tokens per (API, audience, scope,
 * resource, caller's token), the caller's token kept in it only as a SHA-256 hash; concurrent
 * calls for one key share one exchange; the issuer's refusals are remembered for
 * TOKEN_EXCHANGE_FAILURE_TTL_S; and a circuit breaker that stops asking an issuer that failed
 * three times in a row, for the same time, then lets one trial exchange through. Every call
 * counts one outcome in `agent_token_exchanges_total` and, with tracing on, is one
 * `token_exchange <api>` span under the tool call's, with the outcome; only exchanges sent to the
 * issuer are timed and logged, as API, outcome, status and duration: never a token, scope or secret.
 */
import { sha256Hex } from "../auth/hashing.js";
import type { Principal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import { ApiPolicyError } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { ATTR } from "../observability/trace-attributes.js";
import type { TraceSpan, Tracing } from "../observability/tracing.js";
import type { Settings } from "../settings/parse.js";
import type { ApiPolicy, Policy } from "./document.js";
import { actorOf, askIssuer, type IssuerClient } from "./exchange-wire.js";

export type ExchangeOutcome = "issued" | "cached" | "refused" | "no_actor" | "unavailable" | "circuit_open";

export interface TokenExchangerOptions extends IssuerClient {
  /** TOKEN_EXCHANGE_MAX_TTL_S: the longest an exchanged token is reused. */
  readonly maxTtlS: number;
  /** TOKEN_EXCHANGE_FAILURE_TTL_S: how long a refusal is remembered and the breaker stays open. */
  readonly failureTtlS: number;
  /** TOKEN_EXCHANGE_CACHE_MAX: cached tokens and remembered refusals, least recently used out. */
  readonly cacheMax: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, "tokenExchanges" | "tokenExchangeDuration">;
  /** `token_exchange` spans (none without it, or while it is off). */
  readonly tracing?: Tracing;
}

export interface TokenExchanger {
  /**
   * The access token for one call to `api` for `principal`, or an ApiPolicyError the model can
   * read (the call is then not sent). `logger`, the run's, writes the exchange's log line;
   * `span`, the tool call's, is the parent of the exchange's span.
   */
  tokenFor(api: ApiPolicy, principal: Principal, logger?: Logger, span?: TraceSpan): Promise<string>;
}

/** A caller's token with this little left is not exchanged (spec 5.8). */
const MIN_SUBJECT_LEFT_MS = 10_000;
/** An exchanged token is reused no later than this before the caller's own token expires. */
const SUBJECT_MARGIN_MS = 30_000;
/** Consecutive failures that open the breaker. */
const BREAKER_FAILURES = 3;

type Refused = Exclude<ExchangeOutcome, "issued" | "cached">;

/** What became of one call, for its span. */
interface Seen {
  outcome?: ExchangeOutcome;
}

/** What an exchange came to, for every call sharing it: a token, or a refusal with its outcome. */
type Result = { readonly kind: "token"; readonly token: string } | { readonly kind: "refused"; readonly outcome: Refused };

/** A cache entry: a token to reuse, or the issuer's refusal to repeat, until `until` (epoch ms). */
type Entry = Result & { readonly until: number };

const MESSAGES: Record<Refused | "no_token" | "expiring", (api: string) => string> = {
  no_token: (api) =>
    `API ${api} needs the caller's own token to exchange, and this call has none (a shared key, or a run resumed by a role approver); nothing was sent`,
  expiring: (api) => `the caller's token expires too soon to be exchanged for API ${api}; sign in again; nothing was sent`,
  refused: (api) => `the token issuer refused to exchange the caller's token for API ${api}; nothing was sent`,
  no_actor: (api) => `the exchanged token for API ${api} names no actor, so it is not used; nothing was sent`,
  unavailable: (api) => `the token issuer is unavailable, so no token for API ${api} was obtained; try again later; nothing was sent`,
  circuit_open: (api) =>
    `the token issuer is unavailable (it failed repeatedly; exchanges resume in a few seconds), so no token for API ${api} was obtained; nothing was sent`,
};

export function createTokenExchanger(options: TokenExchangerOptions): TokenExchanger {
  const { clock, logger, metrics } = options;
  const failureMs = options.failureTtlS * 1000;
  const cache = new Lru<Entry>(options.cacheMax);
  const inflight = new Map<string, Promise<Result>>();
  const breaker = new Breaker(failureMs);
  const warnedActorless = new Set<string>();

  /** Counts a call's outcome (and notes it for the call's span). */
  const count = (api: string, outcome: ExchangeOutcome, seen: Seen | undefined) => {
    metrics.tokenExchanges.inc({ api, outcome });
    if (seen) seen.outcome = outcome;
  };
  const refuse = (api: string, outcome: Refused, seen: Seen | undefined, message = MESSAGES[outcome](api)): never => {
    count(api, outcome, seen);
    throw new ApiPolicyError(message);
  };
  /** Counts the outcome of a call that got `result`, `fresh` when its exchange was its own. */
  const settle = (api: string, result: Result, fresh: boolean, seen: Seen | undefined): string => {
    if (result.kind === "refused") return refuse(api, result.outcome, seen);
    count(api, fresh ? "issued" : "cached", seen);
    return result.token;
  };

  /** Sends one exchange; its result is cached or remembered here, and counted by each caller. */
  async function exchange(api: ApiPolicy, subject: NonNullable<Principal["token"]>, key: string, trial: boolean, log: Logger): Promise<Result> {
    const settings = api.exchange!;
    const sentAt = clock.now();
    const started = performance.now();
    const answer = await askIssuer(options, { subjectToken: subject.raw, audience: settings.audience, scope: settings.scope, resource: settings.resource });
    const seconds = (performance.now() - started) / 1000;
    metrics.tokenExchangeDuration.observe(seconds, { api: api.name });

    let result: Result;
    if (answer.kind === "unavailable") {
      result = { kind: "refused", outcome: "unavailable" };
      if (breaker.failed(clock.now(), trial))
        logger.warning("token issuer failing: exchanges are refused without asking it for a while", { failures: BREAKER_FAILURES, open_s: options.failureTtlS });
    } else {
      // The issuer answered: it is up, whatever it said.
      breaker.succeeded(trial);
      const actorless = answer.kind === "issued" && actorOf(answer.token) === undefined;
      if (answer.kind === "refused") result = { kind: "refused", outcome: "refused" };
      else if (actorless && !settings.allow_actorless) result = { kind: "refused", outcome: "no_actor" };
      else {
        if (actorless && !warnedActorless.has(api.name)) {
          warnedActorless.add(api.name);
          logger.warning("exchanged token names no actor; used because exchange.allow_actorless is true", { api: api.name });
        }
        result = { kind: "token", token: answer.token };
      }
    }
    log.info("token exchange", {
      api: api.name,
      outcome: result.kind === "token" ? "issued" : result.outcome,
      status: answer.status,
      duration_ms: Math.round(seconds * 1000),
    });

    if (answer.kind === "issued" && result.kind === "token") {
      let until = sentAt + Math.min(answer.expiresInS, options.maxTtlS) * 1000;
      if (subject.expiresAt !== undefined) until = Math.min(until, subject.expiresAt - SUBJECT_MARGIN_MS);
      // A token whose reuse would outlive the caller's is still good for this one call.
      if (until > clock.now()) cache.set(key, { ...result, until });
    } else if (result.kind === "refused" && result.outcome !== "unavailable") {
      cache.set(key, { ...result, until: clock.now() + failureMs });
    }
    return result;
  }

  async function obtain(api: ApiPolicy, principal: Principal, log: Logger, seen: Seen | undefined): Promise<string> {
    const settings = api.exchange;
    const subject = principal.token;
    if (!settings || !subject) return refuse(api.name, "refused", seen, MESSAGES.no_token(api.name));
    if (subject.expiresAt !== undefined && subject.expiresAt - clock.now() <= MIN_SUBJECT_LEFT_MS)
      return refuse(api.name, "refused", seen, MESSAGES.expiring(api.name));
    const hash = await sha256Hex(subject.raw);
    const key = [api.name, settings.audience, settings.scope ?? "", settings.resource ?? "", hash].join("\u0000");

    const cached = cache.get(key, clock.now());
    if (cached) return settle(api.name, cached, false, seen);
    const shared = inflight.get(key);
    if (shared) return settle(api.name, await shared, false, seen);
    const admitted = breaker.admit(clock.now());
    if (admitted === "refuse") return refuse(api.name, "circuit_open", seen);
    const pending = exchange(api, subject, key, admitted === "trial", log).finally(() => inflight.delete(key));
    inflight.set(key, pending);
    return settle(api.name, await pending, true, seen);
  }

  const { tracing } = options;
  const issuer = URL.canParse(options.url) ? new URL(options.url) : undefined;
  return {
    async tokenFor(api, principal, log = logger, parent) {
      if (!tracing?.enabled) return obtain(api, principal, log, undefined);
      const span = tracing.tokenExchangeSpan(api.name, parent, issuer);
      const seen: Seen = {};
      try {
        return await obtain(api, principal, log, seen);
      } catch (error) {
        span.fail(seen.outcome ?? (error instanceof Error ? error.name : "Error"));
        throw error;
      } finally {
        span.set(ATTR.exchangeOutcome, seen.outcome).end();
      }
    },
  };
}

/**
 * The exchanger the settings describe (TOKEN_EXCHANGE_*), when the policy has an `auth: exchange`
 * API and the issuer's URL, client id and secret are all set; else none, and those APIs' calls
 * are refused (outside dev startup already refused the missing settings: auth-fit.ts).
 */
export function tokenExchangerFor(
  policy: Policy,
  settings: Settings,
  deps: Pick<TokenExchangerOptions, "fetch" | "clock" | "logger" | "metrics" | "tracing">,
): TokenExchanger | undefined {
  const { TOKEN_EXCHANGE_URL: url, TOKEN_EXCHANGE_CLIENT_ID: clientId, TOKEN_EXCHANGE_CLIENT_SECRET: clientSecret } = settings;
  if (![...policy.apis.values()].some((api) => api.auth === "exchange") || !url || !clientId || !clientSecret) return undefined;
  return createTokenExchanger({
    ...deps,
    url,
    clientId,
    clientSecret,
    clientAuth: settings.TOKEN_EXCHANGE_CLIENT_AUTH,
    subjectTokenType: settings.TOKEN_EXCHANGE_SUBJECT_TOKEN_TYPE,
    timeoutMs: settings.TOKEN_EXCHANGE_TIMEOUT_MS,
    maxTtlS: settings.TOKEN_EXCHANGE_MAX_TTL_S,
    failureTtlS: settings.TOKEN_EXCHANGE_FAILURE_TTL_S,
    cacheMax: settings.TOKEN_EXCHANGE_CACHE_MAX,
  });
}

/**
 * Closed: every exchange goes to the issuer. Three failures in a row open it for `openMs`: calls
 * are refused without asking. Then half-open: one trial exchange goes; its success closes the
 * breaker, its failure opens it again. Only the first opening is worth a warning (returned by
 * `failed`); the exchange log lines show the rest.
 */
class Breaker {
  private failures = 0;
  private openUntil: number | undefined;
  private trialRunning = false;

  constructor(private readonly openMs: number) {}

  admit(now: number): "send" | "trial" | "refuse" {
    if (this.openUntil === undefined) return "send";
    if (now < this.openUntil || this.trialRunning) return "refuse";
    this.trialRunning = true;
    return "trial";
  }

  succeeded(trial: boolean): void {
    if (trial) this.trialRunning = false;
    this.failures = 0;
    this.openUntil = undefined;
  }

  /** True when this failure opened a closed breaker. */
  failed(now: number, trial: boolean): boolean {
    if (trial) {
      this.trialRunning = false;
      this.openUntil = now + this.openMs;
      return false;
    }
    this.failures++;
    if (this.failures < BREAKER_FAILURES || this.openUntil !== undefined) return false;
    this.openUntil = now + this.openMs;
    return true;
  }
}

/** A Map in use order: a read moves an entry to the end, the oldest falls out past `max`. */
class Lru<V extends { readonly until: number }> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly max: number) {}

  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.until <= now) return undefined;
    this.entries.set(key, entry);
    return entry;
  }

  set(key: string, entry: V): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }
}
