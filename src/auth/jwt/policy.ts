/**
 * AUTH_POLICY=jwt (spec 5.3): per-user principals from a verified OIDC/JWT bearer token, with
 * jose doing signatures and standard claims and this module refusing what jose lets through
 * (see token.ts), reading roles, the RFC 8693 actor chain and the presenting client. A bounded
 * cache of verified tokens (keyed by a hash of the token, kept no longer than its `exp` or the
 * key set's life) spares the signature check on repeated requests; the rules every policy
 * shares (5.6) still run on every request, in the auth middleware.
 */
import { errors as joseErrors, importSPKI, importX509, jwtVerify } from "jose";
import type { Clock } from "../../clock.js";
import type { Ids } from "../../ids.js";
import type { Logger } from "../../observability/logger.js";
import { unauthorized, unavailable } from "../../problems.js";
import { jwtVariableProblems, type Settings } from "../../settings/parse.js";
import { bearerToken, type AuthPolicy } from "../policy.js";
import { ACTIONS, type Actor, type Principal } from "../principal.js";
import { IssuerUnavailable, JwksCache, type KeyResolver, UnknownKey } from "./keys.js";
import { inspectToken, TokenProblem } from "./token.js";

const CACHE_MAX = 10_000;

export interface JwtPolicy extends AuthPolicy {
  /** Problems that make the policy unusable (missing key source, issuer, audience ...). */
  readonly problems: readonly string[];
}

interface Deps {
  readonly settings: Settings;
  readonly fetch: typeof fetch;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly logger: Logger;
}

export async function createJwtPolicy(deps: Deps): Promise<JwtPolicy> {
  const { settings: s, clock, logger } = deps;
  const problems = jwtVariableProblems(s, s.dev).map((p) => `${p.variable} ${p.message}`);
  const algorithms = new Set(s.AUTH_JWT_ALGORITHMS);
  const skew = s.AUTH_JWT_CLOCK_SKEW_S;

  let jwks: JwksCache | undefined;
  let publicKey: KeyResolver | undefined;
  if (s.AUTH_JWT_JWKS_URL) {
    jwks = new JwksCache({ url: s.AUTH_JWT_JWKS_URL, fetch: deps.fetch, clock, cacheMs: s.AUTH_JWT_JWKS_CACHE_S * 1000, logger });
  } else if (s.AUTH_JWT_PUBLIC_KEY) {
    const pem = s.AUTH_JWT_PUBLIC_KEY.replace(/\\n/g, "\n");
    const byAlg = new Map<string, Promise<CryptoKey>>();
    publicKey = (header) => {
      const alg = String(header.alg);
      let key = byAlg.get(alg);
      if (!key) {
        key = pem.includes("BEGIN CERTIFICATE") ? importX509(pem, alg) : importSPKI(pem, alg);
        byAlg.set(alg, key);
      }
      return key;
    };
    // Usable when it imports for at least one allowed algorithm (an EC key under RS256,ES256 is fine).
    const asymmetric = s.AUTH_JWT_ALGORITHMS.filter((a) => !a.startsWith("HS"));
    const usable = await Promise.all(asymmetric.map((alg) => publicKey!({ alg }).then(() => true, () => false)));
    if (asymmetric.length > 0 && !usable.includes(true))
      problems.push("AUTH_JWT_PUBLIC_KEY is not a PEM public key or certificate for the allowed algorithms");
  }
  const secret = s.AUTH_JWT_SECRET ? new TextEncoder().encode(s.AUTH_JWT_SECRET) : undefined;
  const resolve: KeyResolver = async (header) => {
    if (String(header.alg).startsWith("HS")) {
      if (!secret) throw new TokenProblem("algorithm not allowed");
      return secret;
    }
    if (jwks) return jwks.resolve(header);
    if (publicKey) return publicKey(header);
    throw new TokenProblem("algorithm not allowed");
  };

  const cache = new Map<string, { principal: Principal; until: number }>();
  const invalid = (reason: string) => unauthorized(`Invalid bearer token: ${reason}.`, true);

  const verify = async (token: string): Promise<{ principal: Principal; until: number }> => {
    let payload: Record<string, unknown>;
    try {
      inspectToken(token, algorithms);
      const verified = await jwtVerify(token, resolve, {
        algorithms: [...algorithms],
        clockTolerance: skew,
        currentDate: new Date(clock.now()),
        ...(s.AUTH_JWT_ISSUER ? { issuer: s.AUTH_JWT_ISSUER } : {}),
        ...(s.AUTH_JWT_AUDIENCE.length > 0 ? { audience: s.AUTH_JWT_AUDIENCE } : {}),
      });
      payload = verified.payload as Record<string, unknown>;
    } catch (error) {
      throw mapError(error, invalid, deps.ids);
    }
    const nowS = clock.now() / 1000;
    if (typeof payload.iat === "number" && payload.iat > nowS + skew) throw invalid("token issued in the future");

    const subject = claimAt(payload, s.AUTH_JWT_PRINCIPAL_CLAIM);
    if (typeof subject !== "string" || subject === "") throw invalid("no principal claim");
    const actor = readActor(payload, s, invalid);
    const aud = payload.aud === undefined ? [] : Array.isArray(payload.aud) ? payload.aud.map(String) : [String(payload.aud)];
    const exp = typeof payload.exp === "number" ? payload.exp * 1000 : Infinity;
    const principal: Principal = {
      id: subject,
      roles: readRoles(claimAt(payload, s.AUTH_JWT_ROLES_CLAIM)),
      permissions: new Set(ACTIONS),
      attributes: {},
      credentials: {},
      actor,
      token: { raw: token, audiences: aud, ...(exp !== Infinity ? { expiresAt: exp } : {}) },
    };
    const until = Math.min(exp, jwks ? jwks.validUntil : Infinity, clock.now() + 300_000);
    return { principal, until };
  };

  return {
    name: "jwt",
    problems,
    async authenticate(request) {
      if (problems.length > 0) throw unavailable("Authentication is misconfigured.", deps.ids.errorId());
      const token = bearerToken(request);
      if (token === undefined || token === "") throw unauthorized("Missing bearer token.", false);
      if (token.length > 16384) throw invalid("token too long");
      // Keyed by the token itself (the cache is bounded): hashing every request cost more than
      // the rest of a cached check. Only a token that verified is ever stored.
      const key = token;
      const hit = cache.get(key);
      const now = clock.now();
      if (hit && hit.until > now) return hit.principal;
      const fresh = await verify(token);
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
      cache.set(key, fresh);
      return fresh.principal;
    },
  };
}

function mapError(error: unknown, invalid: (reason: string) => Error, ids: Ids): Error {
  if (error instanceof TokenProblem) return invalid(error.message);
  if (error instanceof IssuerUnavailable) return unavailable("The token issuer is unreachable and no usable keys are left.", ids.errorId());
  if (error instanceof UnknownKey) return invalid("unknown key");
  const code = (error as { code?: string }).code;
  const claim = (error as { claim?: string }).claim;
  switch (code) {
    case joseErrors.JWTExpired.code:
      return invalid("token expired");
    case joseErrors.JWTClaimValidationFailed.code:
      if (claim === "nbf") return invalid("token not yet valid");
      if (claim === "iss") return invalid("wrong issuer");
      if (claim === "aud") return invalid("wrong audience");
      if (claim === "iat") return invalid("token issued in the future");
      return invalid("claim check failed");
    case joseErrors.JWSSignatureVerificationFailed.code:
      return invalid("bad signature");
    case joseErrors.JOSEAlgNotAllowed.code:
    case joseErrors.JOSENotSupported.code:
      return invalid("algorithm not allowed");
    case joseErrors.JWKSNoMatchingKey.code:
      return invalid("unknown key");
    default:
      // Anything else, a plain TypeError from a weak key included, is still a 401, never a 500.
      return invalid("malformed token");
  }
}

/** A claim by dotted path (`realm_access.roles`). */
export function claimAt(payload: Record<string, unknown>, path: string): unknown {
  if (path in payload) return payload[path];
  let v: unknown = payload;
  for (const part of path.split(".")) {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Roles: a list of strings, or one string separated by spaces or commas. */
export function readRoles(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((r): r is string => typeof r === "string" && r !== "" && !r.includes(","));
  if (typeof value === "string") return value.split(/[\s,]+/).filter((r) => r !== "");
  return [];
}

/**
 * The actor: the outermost `act.sub` presents the request, nested `act` are earlier agents. A
 * malformed `act` at any level is a 401, never read as the user's own token. A token without
 * one, from a client that is not a direct client, is that client presenting the user's token
 * (only when AUTH_JWT_DIRECT_CLIENTS lists any).
 */
function readActor(payload: Record<string, unknown>, s: Settings, invalid: (reason: string) => Error): Actor | null {
  const clientClaim = claimAt(payload, s.AUTH_JWT_CLIENT_CLAIM) ?? payload.client_id;
  const client = typeof clientClaim === "string" && clientClaim !== "" ? clientClaim : null;
  if (s.AUTH_JWT_ACTOR_CLAIM !== "") {
    const present = s.AUTH_JWT_ACTOR_CLAIM in payload || claimAt(payload, s.AUTH_JWT_ACTOR_CLAIM) !== undefined;
    if (present) {
      const chain: string[] = [];
      let act: unknown = claimAt(payload, s.AUTH_JWT_ACTOR_CLAIM);
      for (let depth = 0; act !== undefined; depth++) {
        if (typeof act !== "object" || act === null || Array.isArray(act)) throw invalid("invalid actor claim");
        const sub = (act as Record<string, unknown>).sub;
        if (typeof sub !== "string" || sub === "") throw invalid("invalid actor claim");
        chain.push(sub);
        if (depth > 16) throw invalid("delegation too deep");
        act = (act as Record<string, unknown>).act;
      }
      return { id: chain[0]!, chain: chain.slice(1), client };
    }
  }
  // With no direct clients listed there is nothing to tell them apart by: the token is the user's.
  const direct = s.AUTH_JWT_DIRECT_CLIENTS;
  if (client !== null && direct.length > 0 && !direct.includes(client)) return { id: `client:${client}`, chain: [], client };
  return null;
}
