/**
 * Where verification keys come from (spec 5.3). A JWK set is cached by hand around jose's
 * `createLocalJWKSet`, because jose's remote helper blocks on refresh and fails while the
 * issuer is down: one fetch at a time, redirects never followed, an unknown key id refetches at
 * most once per 30 s, an expired cache refreshes in the background while cached keys keep
 * verifying, and when the issuer is unreachable the last good keys stay usable one more hour.
 * While the issuer fails it is asked again at most once per 30 s, whatever the traffic, and the
 * outage is logged once (one WARNING when it starts, one INFO when it ends).
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWK, type JWTHeaderParameters } from "jose";
import type { Clock } from "../../clock.js";
import type { Logger } from "../../observability/logger.js";
import { readCapped } from "../../streams.js";

/**
 * The most of a JWKS answer read: a key set is a few kilobytes (1 MiB holds hundreds of RSA
 * keys); an issuer that sends more is failing, not publishing keys.
 */
const JWKS_MAX_BYTES = 1_048_576;

export const UNKNOWN_KID_REFETCH_MS = 30_000;

/** Whether requests may share I/O promises: not on workerd (see JwksCache.refresh). */
const SHARED_IO = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent !== "Cloudflare-Workers";
export const GRACE_MS = 60 * 60 * 1000;

export type KeyResolver = (header: JWTHeaderParameters) => Promise<CryptoKey | Uint8Array>;

/** The issuer cannot be reached and no usable keys are left: requests answer 503. */
export class IssuerUnavailable extends Error {
  override name = "IssuerUnavailable";
}
/** No key matches the token's key id, even after a refetch. */
export class UnknownKey extends Error {
  override name = "UnknownKey";
}

interface Options {
  readonly url: string;
  readonly fetch: typeof fetch;
  readonly clock: Clock;
  readonly cacheMs: number;
  readonly logger: Logger;
  readonly timeoutMs?: number;
}

export class JwksCache {
  private keys: ReturnType<typeof createLocalJWKSet> | undefined;
  private kids = new Set<string | undefined>();
  private fetchedAt = 0;
  private inflight: Promise<void> | undefined;
  private lastKidRefetch = -Infinity;
  /** When the last fetch failed, while the issuer is failing; undefined while it answers. */
  private failedAt: number | undefined;

  constructor(private readonly options: Options) {}

  /** Until when verified tokens may be cached: the key set's own life. */
  get validUntil(): number {
    return this.fetchedAt + this.options.cacheMs;
  }

  readonly resolve: KeyResolver = async (header) => {
    const now = this.options.clock.now();
    if (!this.keys) await this.refresh();
    else if (now >= this.validUntil) {
      if (now >= this.validUntil + GRACE_MS) {
        // Past the grace hour: only fresh keys will do.
        await this.refresh();
      } else void this.refresh().catch(() => {});
    }
    if (!this.kids.has(header.kid) && header.kid !== undefined && now - this.lastKidRefetch >= UNKNOWN_KID_REFETCH_MS) {
      this.lastKidRefetch = now;
      await this.refresh().catch(() => {});
    }
    if (!this.keys) throw new IssuerUnavailable("no keys");
    try {
      return await this.keys(header);
    } catch (error) {
      if ((error as { code?: string }).code === "ERR_JWKS_NO_MATCHING_KEY") throw new UnknownKey("unknown key");
      throw error;
    }
  };

  /**
   * One fetch at a time: concurrent callers share it. While the issuer fails, a refresh within
   * 30 s of the last failure does not ask it again: the keys stay as they are.
   *
   * On workerd a promise settled by one request's I/O must not be awaited by another request
   * (the runtime cancels or hangs such continuations once the first request ends), so there each
   * request that needs the keys fetches them itself; the cache and the failure window still keep
   * the issuer from being asked more than the traffic needs.
   */
  private refresh(): Promise<void> {
    const now = this.options.clock.now();
    if (this.failedAt !== undefined && now - this.failedAt < UNKNOWN_KID_REFETCH_MS) {
      // Past the grace hour the last good keys are no longer good, asked or not.
      if (now >= this.validUntil + GRACE_MS) this.keys = undefined;
      return this.keys ? Promise.resolve() : Promise.reject(new IssuerUnavailable("issuer unreachable"));
    }
    if (!SHARED_IO) return this.load();
    this.inflight ??= this.load().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async load(): Promise<void> {
    const { url, clock, logger } = this.options;
    const controller = new AbortController();
    // Aborted with a TimeoutError, whether the issuer stalls before its headers (fetch rejects
    // with the reason) or in the middle of its body (readCapped throws it): the log names it so.
    const timer = setTimeout(() => controller.abort(new DOMException("the JWKS fetch timed out", "TimeoutError")), this.options.timeoutMs ?? 5_000);
    try {
      const res = await this.options.fetch(url, { redirect: "manual", signal: controller.signal, headers: { accept: "application/json" } });
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => {});
        throw new Error(`status ${res.status}`);
      }
      const bytes = await readCapped(
        res.body,
        JWKS_MAX_BYTES,
        () => new Error("the JWK set is larger than 1 MiB"),
        () => controller.signal.aborted,
        () => controller.signal.reason as Error,
      );
      const body = JSON.parse(new TextDecoder().decode(bytes)) as JSONWebKeySet;
      if (!body || !Array.isArray(body.keys)) throw new Error("not a JWK set");
      this.keys = createLocalJWKSet(body);
      this.kids = new Set(body.keys.map((k: JWK) => k.kid));
      this.fetchedAt = clock.now();
      if (this.failedAt !== undefined) logger.info("JWKS fetch succeeded again");
      this.failedAt = undefined;
    } catch (error) {
      const now = clock.now();
      if (this.failedAt === undefined) logger.warning("JWKS fetch failed", { error_type: error instanceof Error ? error.name : "Error" });
      this.failedAt = now;
      if (!this.keys || now >= this.validUntil + GRACE_MS) {
        this.keys = undefined;
        throw new IssuerUnavailable("issuer unreachable");
      }
    } finally {
      clearTimeout(timer);
    }
  }
}
