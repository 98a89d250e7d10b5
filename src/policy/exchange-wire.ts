/**
 * One RFC 8693 token exchange on the wire (spec 5.8): the form sent to the token issuer, the
 * client's authentication, one deadline for the whole exchange, and what makes an answer usable.
 * The cache, the sharing of concurrent exchanges and the circuit breaker around it are in
 * exchange.ts. Nothing here logs: the answer's token, the caller's token and the client secret
 * only ever travel between the issuer and the caller of `askIssuer`.
 */
import { decodeJson } from "../auth/jwt/token.js";
import { readCapped } from "../streams.js";
import type { OutboundInit } from "./outbound.js";

const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** An exchanged token longer than this is an unusable answer (spec 5.8: at most 16 KiB). */
const TOKEN_MAX_BYTES = 16384;
/** The whole answer is read only this far: room for the token and the answer's other members. */
const ANSWER_MAX_BYTES = 65536;
/** The token's lifetime when the answer gives no `expires_in` (spec 5.8). */
const DEFAULT_EXPIRES_IN_S = 60;
/** RFC 6750's b64token, loosened to any visible ASCII: the token goes into a header as it is. */
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/** Where and how this agent asks the issuer. */
export interface IssuerClient {
  readonly url: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly clientAuth: "client_secret_basic" | "client_secret_post";
  readonly subjectTokenType: string;
  /** One deadline for the whole exchange, answer body included. */
  readonly timeoutMs: number;
  readonly fetch: typeof fetch;
}

/** What one exchange asks for: the caller's token, and the API's `exchange` settings. */
export interface ExchangeAsk {
  readonly subjectToken: string;
  readonly audience: string;
  readonly scope?: string | undefined;
  readonly resource?: string | undefined;
}

/**
 * What the issuer made of one exchange. `status` is the issuer's HTTP status, 0 when none came
 * (unreachable, or the deadline passed first).
 */
export type IssuerAnswer =
  | { readonly kind: "issued"; readonly status: number; readonly token: string; readonly expiresInS: number }
  /** The issuer said no (a 4xx other than 408 and 429): asking again soon will not help. */
  | { readonly kind: "refused"; readonly status: number }
  /** Unreachable, too slow, a 5xx, 408 or 429, a redirect, or an answer that is not a usable token. */
  | { readonly kind: "unavailable"; readonly status: number };

export async function askIssuer(client: IssuerClient, ask: ExchangeAsk): Promise<IssuerAnswer> {
  const seen = { status: 0 };
  // The signal ends a connection still waiting as well as a body still arriving; the race ends
  // the exchange at the deadline even when an injected fetch ignores the signal. Exchanges are
  // rare next to calls (their tokens are cached), so a signal per exchange costs nothing here,
  // unlike per outbound call (client.ts's `InFlight`).
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<IssuerAnswer>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ kind: "unavailable", status: seen.status });
    }, client.timeoutMs);
  });
  try {
    return await Promise.race([send(client, ask, controller.signal, seen), deadline]);
  } catch {
    return { kind: "unavailable", status: seen.status };
  } finally {
    clearTimeout(timer);
  }
}

async function send(client: IssuerClient, ask: ExchangeAsk, signal: AbortSignal, seen: { status: number }): Promise<IssuerAnswer> {
  const form = new URLSearchParams({
    grant_type: GRANT_TYPE,
    subject_token: ask.subjectToken,
    subject_token_type: client.subjectTokenType,
    requested_token_type: ACCESS_TOKEN_TYPE,
    audience: ask.audience,
  });
  if (ask.scope !== undefined) form.set("scope", ask.scope);
  if (ask.resource !== undefined) form.set("resource", ask.resource);
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
  if (client.clientAuth === "client_secret_basic") {
    // RFC 6749 2.3.1: id and secret are form-urlencoded before they are joined and encoded, so a
    // `:` in the id cannot move the split; the result is ASCII, which btoa takes.
    headers.authorization = `Basic ${btoa(`${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`)}`;
  } else {
    form.set("client_id", client.clientId);
    form.set("client_secret", client.clientSecret);
  }
  const init: OutboundInit = {
    method: "POST",
    headers,
    body: form.toString(),
    redirect: "manual",
    signal,
    connectTimeoutMs: Math.min(1000, client.timeoutMs),
  };
  const response = await client.fetch(client.url, init);
  const status = response.status;
  seen.status = status;
  if (status !== 200) {
    await response.body?.cancel().catch(() => {});
    if (status >= 400 && status < 500 && status !== 408 && status !== 429) return { kind: "refused", status };
    // A redirect (opaque under `redirect: manual`, status 0) is never followed: unusable.
    return { kind: "unavailable", status };
  }
  const bytes = await readCapped(response.body, ANSWER_MAX_BYTES, () => new Error("answer too large"), () => signal.aborted);
  const token = usableToken(bytes);
  return token ? { kind: "issued", status, ...token } : { kind: "unavailable", status };
}

/** A 200 answer's token: a Bearer `access_token` of at most 16 KiB with a positive integer `expires_in`. */
function usableToken(bytes: Uint8Array): { token: string; expiresInS: number } | undefined {
  let answer: unknown;
  try {
    answer = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return undefined;
  const { access_token: token, token_type: type, expires_in: expiresIn } = answer as Record<string, unknown>;
  if (typeof token !== "string" || token.length > TOKEN_MAX_BYTES || !TOKEN_CHARS.test(token)) return undefined;
  if (typeof type !== "string" || type.toLowerCase() !== "bearer") return undefined;
  if (expiresIn === undefined) return { token, expiresInS: DEFAULT_EXPIRES_IN_S };
  if (typeof expiresIn !== "number" || !Number.isSafeInteger(expiresIn) || expiresIn <= 0) return undefined;
  return { token, expiresInS: expiresIn };
}

/**
 * The actor an exchanged token names: its payload's `act.sub`, read without verifying (the API
 * that receives the token verifies it; here it only decides whether to send it). Undefined when
 * the token is not a JWT, or names no actor.
 */
export function actorOf(token: string): string | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || !/^[A-Za-z0-9_-]+$/.test(parts[1]!)) return undefined;
  let payload: Record<string, unknown>;
  try {
    payload = decodeJson(parts[1]!);
  } catch {
    return undefined;
  }
  const act = payload.act;
  if (typeof act !== "object" || act === null || Array.isArray(act)) return undefined;
  const sub = (act as Record<string, unknown>).sub;
  return typeof sub === "string" && sub !== "" ? sub : undefined;
}

/** application/x-www-form-urlencoded, as RFC 6749 appendix B writes a client id or secret. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
