/**
 * Shared by the jwt tests (spec 5.3): real keys made with jose, a loopback JWK-set server that
 * counts its requests and can be switched to failing, a clock the tests move, and token makers
 * (jose's SignJWT for ordinary tokens, hand-built compact tokens with a real signature for what
 * SignJWT cannot write: duplicate members, `1e400`, padded parts ...).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { CompactSign, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import { expect } from "vitest";
import { defineTool } from "../../src/index.js";

export const ISS = "https://issuer.example.test";
export const AUD = "agent-api";

// ---------------------------------------------------------------------------------------------
// Clock
// ---------------------------------------------------------------------------------------------

/** Whole seconds, so iat/exp written from it are exact. */
export const T0 = Math.floor(Date.now() / 1000) * 1000;
export const clock = {
  t: T0,
  now() {
    return this.t;
  },
};
export const nowS = () => Math.floor(clock.t / 1000);
export const advance = (seconds: number) => {
  clock.t += seconds * 1000;
};

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

export interface KeyPair {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  readonly jwk: JWK;
}

export async function makeKey(alg: "ES256" | "RS256" | "ES384" | "PS256", kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, alg, privateKey, publicKey, jwk };
}

// ---------------------------------------------------------------------------------------------
// The loopback issuer (JWK set server)
// ---------------------------------------------------------------------------------------------

export type IssuerMode = "ok" | "500" | "down" | "redirect" | "not-a-set" | "huge" | "hold";

export class Issuer {
  server!: Server;
  url = "";
  origin = "";
  /** Requests to /jwks. */
  count = 0;
  /** Every path requested, in order. */
  paths: string[] = [];
  mode: IssuerMode = "ok";
  keys: JWK[] = [];
  /** Keys served at /moved (the redirect target). */
  movedKeys: JWK[] = [];
  delayMs = 0;
  private held: (() => void)[] = [];

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.url = `${this.origin}/jwks`;
  }

  reset(keys: JWK[]): void {
    this.release();
    this.count = 0;
    this.paths = [];
    this.mode = "ok";
    this.keys = keys;
    this.movedKeys = [];
    this.delayMs = 0;
  }

  /** Lets every held answer go (mode "hold"). */
  release(): void {
    const held = this.held;
    this.held = [];
    for (const go of held) go();
  }

  get holding(): number {
    return this.held.length;
  }

  async stop(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0]!;
    this.paths.push(path);
    if (path === "/moved") return json(res, 200, { keys: this.movedKeys });
    if (path !== "/jwks") return json(res, 404, { error: "not found" });
    this.count++;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    switch (this.mode) {
      case "500":
        return json(res, 500, { error: "boom" });
      case "down":
        // A connection that dies without an answer, as an unreachable issuer looks to fetch.
        req.socket.destroy();
        return;
      case "redirect":
        res.writeHead(302, { Location: `${this.origin}/moved` });
        res.end();
        return;
      case "not-a-set":
        return json(res, 200, { hello: "world" });
      case "huge": // the current keys, padded past 1 MiB
        return json(res, 200, { keys: this.keys, padding: "x".repeat(1_100_000) });
      case "hold": {
        const keys = () => this.keys; // read when released: keys changed meanwhile are served
        await new Promise<void>((r) => this.held.push(r));
        return json(res, 200, { keys: keys() });
      }
      default:
        return json(res, 200, { keys: this.keys });
    }
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(value));
}

// ---------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------

export interface MintOptions {
  readonly key?: KeyPair;
  /** Override the header's alg (defaults to the key's). */
  readonly alg?: string;
  /** `null` leaves kid out; default the key's kid. */
  readonly kid?: string | null;
  /** Sign with this secret (HS algorithms) instead of the key. */
  readonly secret?: Uint8Array;
}

/**
 * A token from jose's SignJWT: iss, aud, sub "u1", iat now, exp now + 600 s (clock time), then
 * `claims` on top (a claim set to `undefined` is left out).
 */
export async function mint(claims: JWTPayload & Record<string, unknown>, key: KeyPair, options: Omit<MintOptions, "key"> = {}): Promise<string> {
  const payload = { iss: ISS, aud: AUD, sub: "u1", iat: nowS(), exp: nowS() + 600, ...claims };
  const kid = options.kid === null ? undefined : (options.kid ?? key.kid);
  return new SignJWT(payload as JWTPayload)
    .setProtectedHeader({ alg: options.alg ?? key.alg, ...(kid !== undefined ? { kid } : {}) })
    .sign(options.secret ?? key.privateKey);
}

export const b64 = (value: string | Uint8Array) => Buffer.from(value).toString("base64url");

/** The standard claims as JSON members, for hand-written payload text. */
export const stdMembers = (over: { exp?: string; iat?: string } = {}) =>
  `"iss":${JSON.stringify(ISS)},"aud":${JSON.stringify(AUD)},"iat":${over.iat ?? nowS()},"exp":${over.exp ?? nowS() + 600}`;

/** A compact JWS over the exact payload bytes given (header written by jose), really signed. */
export async function signPayloadText(payloadText: string, key: KeyPair): Promise<string> {
  return new CompactSign(new TextEncoder().encode(payloadText)).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
}

/** A compact JWS over the exact header and payload text given, really signed with WebCrypto. */
export async function signRaw(headerText: string, payloadText: string, key: KeyPair): Promise<string> {
  const input = `${b64(headerText)}.${b64(payloadText)}`;
  const params = key.alg.startsWith("ES") ? { name: "ECDSA", hash: key.alg === "ES384" ? "SHA-384" : "SHA-256" } : { name: "RSASSA-PKCS1-v1_5" };
  const sig = await crypto.subtle.sign(params, key.privateKey, new TextEncoder().encode(input));
  return `${input}.${b64(new Uint8Array(sig))}`;
}

// ---------------------------------------------------------------------------------------------
// Requests and assertions
// ---------------------------------------------------------------------------------------------

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A guarded GET with the token (or with no Authorization header at all). */
export function guarded(token?: string, headers: Record<string, string> = {}, path = "/threads"): Request {
  return new Request(`http://test${path}`, { headers: { ...(token !== undefined ? bearer(token) : {}), ...headers } });
}

type Fetcher = { fetch(r: Request): Promise<Response> };

export async function expectOk(app: Fetcher, token: string): Promise<void> {
  const res = await app.fetch(guarded(token));
  const text = await res.text();
  expect(res.status, text).toBe(200);
}

export async function expectInvalid(app: Fetcher, token: string, reason: string): Promise<void> {
  const res = await app.fetch(guarded(token));
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
  expect(await res.json()).toEqual({ detail: `Invalid bearer token: ${reason}.` });
}

export async function expectUnavailable(app: Fetcher, token: string, detail?: string | RegExp): Promise<void> {
  const res = await app.fetch(guarded(token));
  expect(res.status).toBe(503);
  const body = (await res.json()) as { detail: string; error_id: string };
  expect(Object.keys(body).sort()).toEqual(["detail", "error_id"]);
  expect(body.error_id).toMatch(/^[0-9a-f]{16}$/);
  if (typeof detail === "string") expect(body.detail).toBe(detail);
  else if (detail) expect(body.detail).toMatch(detail);
}

/** Returns `ctx.principal` as the tool saw it. */
export const whoami = defineTool({
  name: "whoami",
  description: "Returns the caller's public principal.",
  parameters: { type: "object", properties: {} },
  calls: [],
  run: (_args, ctx) => JSON.parse(JSON.stringify(ctx.principal)),
});

export const waitUntil = async (check: () => boolean, ms = 3000) => {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("waitUntil: condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
};
