/**
 * AUTH_POLICY=jwt end to end (spec 5.3, 5.5, 5.6, 5.8, 7.1; CONTRACT 5): real tokens signed with
 * jose against a loopback JWK-set server, through createApp with a clock the tests move. Every
 * refusal asserts the status, the exact body and the WWW-Authenticate header. Also the custom
 * policy (5.4) through `createApp({ authPolicy })`, CORS on guarded routes, and `auth: forward`
 * with `forward_audience`. Key-set handling (fetching, refetching, grace) is in jwt-keys.test.ts.
 */
import { generateKeyPairSync, sign as nodeSign } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportSPKI, type JWK, SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AuthError, type CustomAuthPolicy, defineTool, type Tool } from "../../src/index.js";
import type { ApiRequest } from "../../src/policy/types.js";
import { chat, makeApp, type TestApp } from "../helpers.js";
import {
  AUD,
  advance,
  b64,
  bearer,
  clock,
  expectInvalid,
  expectOk,
  expectUnavailable,
  guarded,
  ISS,
  Issuer,
  type KeyPair,
  makeKey,
  mint,
  nowS,
  signPayloadText,
  signRaw,
  stdMembers,
  T0,
  whoami,
} from "./jwt-fixtures.js";

const issuer = new Issuer();
let es: KeyPair; // ES256, kid k1, in the key set
let rsa: KeyPair; // RS256, kid r1, in the key set
let stranger: KeyPair; // ES256, kid k1 too, NOT in the key set (bad signature)
let es384: KeyPair; // ES384, in the key set, algorithm not allowed by default

beforeAll(async () => {
  await issuer.start();
  [es, rsa, stranger, es384] = await Promise.all([makeKey("ES256", "k1"), makeKey("RS256", "r1"), makeKey("ES256", "k1"), makeKey("ES384", "e384")]);
});
afterAll(async () => issuer.stop());

let app: TestApp | undefined;
beforeEach(() => {
  clock.t = T0;
  issuer.reset([es.jwk, rsa.jwk, es384.jwk]);
});
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const jwtEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  AUTH_POLICY: "jwt",
  AUTH_JWT_JWKS_URL: issuer.url,
  AUTH_JWT_ISSUER: ISS,
  AUTH_JWT_AUDIENCE: AUD,
  ...extra,
});

async function start(extra: Record<string, string> = {}, options: { tools?: Tool[]; policyText?: string } = {}): Promise<TestApp> {
  app = await makeApp(jwtEnv(extra), { clock, tools: [whoami, ...(options.tools ?? [])], ...(options.policyText ? { policyText: options.policyText } : {}) });
  return app;
}

/** Runs `/call whoami {}` with the token and returns `ctx.principal` as the tool saw it. */
async function principalSeen(a: TestApp, token: string): Promise<{ id: string; roles: string[]; attributes: Record<string, unknown>; actor: unknown }> {
  const { res, events, text } = await chat(a, { message: "/call whoami {}" }, bearer(token));
  expect(res.status, text).toBe(200);
  const result = events.find((e) => e.event === "tool.result");
  expect(result?.data.is_error, String(result?.data.result)).toBe(false);
  return JSON.parse(result!.data.result as string);
}

async function expect500(a: TestApp, token: string): Promise<void> {
  const res = await a.fetch(guarded(token));
  expect(res.status).toBe(500);
  const body = (await res.json()) as { detail: string; error_id: string };
  expect(body.error_id).toMatch(/^[0-9a-f]{16}$/);
  expect(body).toEqual({ detail: `Internal server error. Reference: ${body.error_id}.`, error_id: body.error_id });
  expect(a.logs.some((l) => l.error_id === body.error_id)).toBe(true);
}

// ---------------------------------------------------------------------------------------------
// Missing and valid
// ---------------------------------------------------------------------------------------------

describe("jwt: missing credential and a good token", () => {
  it("answers 401 `Missing bearer token.` with `WWW-Authenticate: Bearer` (no error code)", async () => {
    await start();
    for (const req of [guarded(undefined), guarded(undefined, { Authorization: "Bearer" }), guarded(undefined, { Authorization: "Bearer   " }), guarded(undefined, { Authorization: "Basic dTpw" })]) {
      const res = await app!.fetch(req);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
      expect(await res.json()).toEqual({ detail: "Missing bearer token." });
    }
    expect(issuer.count).toBe(0); // nothing to verify, nothing fetched
  });

  it("accepts ES256 and RS256 tokens signed by keys of the set, the scheme case-insensitively", async () => {
    await start();
    await expectOk(app!, await mint({}, es));
    await expectOk(app!, await mint({}, rsa));
    const res = await app!.fetch(guarded(undefined, { Authorization: `bearer ${await mint({ sub: "u2" }, es)}` }));
    expect(res.status).toBe(200);
  });

  it("gives tools the token's subject as the principal id, direct (no actor), never the token", async () => {
    await start();
    const token = await mint({ sub: "alice@example.test" }, es);
    const p = await principalSeen(app!, token);
    expect(p).toEqual({ id: "alice@example.test", roles: [], attributes: {}, actor: null });
    expect(JSON.stringify(p)).not.toContain(token.split(".")[2]!);
  });

  it("logs nothing from the token (neither the token, its signature nor its subject)", async () => {
    await start({ LOG_LEVEL: "DEBUG" });
    const sub = "subject-that-must-not-be-logged";
    const good = await mint({ sub }, es);
    const expired = await mint({ sub, exp: nowS() - 3600 }, es);
    await principalSeen(app!, good);
    await expectInvalid(app!, expired, "token expired");
    await expectInvalid(app!, `${good}x`, "bad signature");
    const logs = app!.rawLogs.join("\n");
    expect(app!.rawLogs.length).toBeGreaterThan(0);
    for (const secret of [good, expired, good.split(".")[1]!, good.split(".")[2]!, sub]) expect(logs).not.toContain(secret);
  });
});

// ---------------------------------------------------------------------------------------------
// Time claims
// ---------------------------------------------------------------------------------------------

describe("jwt: time claims and the clock skew (default 60 s)", () => {
  it("refuses an expired token beyond the skew, accepts one expired within it", async () => {
    await start();
    await expectInvalid(app!, await mint({ exp: nowS() - 61, iat: nowS() - 600 }, es), "token expired");
    await expectOk(app!, await mint({ exp: nowS() - 30, iat: nowS() - 600 }, es));
  });

  it("refuses a token not yet valid beyond the skew, accepts one within it", async () => {
    await start();
    await expectInvalid(app!, await mint({ nbf: nowS() + 120 }, es), "token not yet valid");
    await expectOk(app!, await mint({ nbf: nowS() + 30 }, es));
  });

  it("refuses `iat` in the future beyond the skew, accepts it within", async () => {
    await start();
    await expectInvalid(app!, await mint({ iat: nowS() + 120 }, es), "token issued in the future");
    await expectOk(app!, await mint({ iat: nowS() + 30 }, es));
  });

  it("judges time by the app's clock, not the wall clock", async () => {
    await start();
    const token = await mint({ exp: nowS() + 100 }, es);
    await expectOk(app!, token);
    advance(100 + 61);
    await expectInvalid(app!, token, "token expired"); // the verified-token cache ends at exp
  });

  it("honours AUTH_JWT_CLOCK_SKEW_S", async () => {
    await start({ AUTH_JWT_CLOCK_SKEW_S: "0" });
    await expectInvalid(app!, await mint({ exp: nowS() - 1 }, es), "token expired");
    await expectInvalid(app!, await mint({ nbf: nowS() + 5 }, es), "token not yet valid");
  });

  it("refuses `exp: 1e400` (non-finite) as malformed, written by hand", async () => {
    await start();
    const payload = `{${stdMembers({ exp: "1e400" })},"sub":"u1"}`;
    await expectInvalid(app!, await signPayloadText(payload, es), "malformed token");
    // The same builder with a finite exp is accepted: only the 1e400 was refused.
    await expectOk(app!, await signPayloadText(`{${stdMembers()},"sub":"u1"}`, es));
  });

  it("refuses non-integer time claims as malformed (exp 1.5, a future fractional exp, nbf, iat)", async () => {
    await start();
    await expectInvalid(app!, await mint({ exp: 1.5 }, es), "malformed token");
    await expectInvalid(app!, await mint({ exp: nowS() + 600.5 }, es), "malformed token");
    await expectInvalid(app!, await mint({ nbf: nowS() - 10.25 }, es), "malformed token");
    await expectInvalid(app!, await mint({ iat: nowS() - 0.5 }, es), "malformed token");
    await expectInvalid(app!, await signPayloadText(`{${stdMembers({ iat: "-1e400" })},"sub":"u1"}`, es), "malformed token");
    await expectInvalid(app!, await mint({ exp: String(nowS() + 600) as never }, es), "malformed token");
  });
});

// ---------------------------------------------------------------------------------------------
// Issuer, audience, signature, algorithm, key
// ---------------------------------------------------------------------------------------------

describe("jwt: issuer, audience, signature, algorithm, key id", () => {
  it("refuses a wrong or missing issuer", async () => {
    await start();
    await expectInvalid(app!, await mint({ iss: "https://evil.example.test" }, es), "wrong issuer");
    await expectInvalid(app!, await mint({ iss: undefined }, es), "wrong issuer");
  });

  it("refuses a wrong or missing audience; accepts any listed audience (comma list)", async () => {
    await start({ AUTH_JWT_AUDIENCE: `${AUD},other-api` });
    await expectInvalid(app!, await mint({ aud: "someone-else" }, es), "wrong audience");
    await expectInvalid(app!, await mint({ aud: undefined }, es), "wrong audience");
    await expectOk(app!, await mint({ aud: "other-api" }, es));
    await expectOk(app!, await mint({ aud: ["x", AUD] }, es));
  });

  it("refuses a bad signature: another key under a known kid, and a tampered payload", async () => {
    await start();
    await expectInvalid(app!, await mint({}, stranger), "bad signature");
    const [h, , s] = (await mint({ sub: "u1" }, es)).split(".");
    const forged = b64(JSON.stringify({ iss: ISS, aud: AUD, sub: "admin", iat: nowS(), exp: nowS() + 600 }));
    await expectInvalid(app!, `${h}.${forged}.${s}`, "bad signature");
  });

  it("refuses an algorithm outside AUTH_JWT_ALGORITHMS (ES384 from a key in the set)", async () => {
    await start();
    await expectInvalid(app!, await mint({}, es384), "algorithm not allowed");
  });

  it("refuses `alg: none` unsecured tokens", async () => {
    await start();
    const payload = b64(`{${stdMembers()},"sub":"u1"}`);
    for (const alg of ["none", "None", "NONE"]) {
      // With a (meaningless) signature part: the algorithm is what is refused.
      await expectInvalid(app!, `${b64(JSON.stringify({ alg }))}.${payload}.c2ln`, "algorithm not allowed");
      // The RFC 7519 unsecured form, empty signature: a 401 either way (reason not pinned by the spec).
      const res = await app!.fetch(guarded(`${b64(JSON.stringify({ alg }))}.${payload}.`));
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      expect(["Invalid bearer token: algorithm not allowed.", "Invalid bearer token: malformed token."]).toContain(((await res.json()) as { detail: string }).detail);
    }
  });

  it("refuses HS256 signed with the RSA public key bytes (algorithm confusion), JWKS and PEM", async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const confused = await mint({}, rsa, { alg: "HS256", secret: new TextEncoder().encode(pem) });
    const confusedJwk = await mint({}, rsa, { alg: "HS256", secret: new TextEncoder().encode(JSON.stringify(rsa.jwk)) });
    await start();
    await expectInvalid(app!, confused, "algorithm not allowed");
    await expectInvalid(app!, confusedJwk, "algorithm not allowed");
    await app!.close();
    app = await makeApp({ AUTH_POLICY: "jwt", AUTH_JWT_PUBLIC_KEY: pem, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD, AUTH_JWT_ALGORITHMS: "RS256" }, { clock });
    await expectOk(app, await mint({}, rsa));
    await expectInvalid(app, confused, "algorithm not allowed");
  });

  it("refuses HS256 signed with the PEM bytes even when HS is opted in (the secret is used, not the PEM)", async () => {
    const pem = await exportSPKI(rsa.publicKey);
    app = await makeApp(
      {
        AUTH_POLICY: "jwt",
        AUTH_JWT_PUBLIC_KEY: pem,
        AUTH_JWT_ISSUER: ISS,
        AUTH_JWT_AUDIENCE: AUD,
        AUTH_JWT_ALLOW_HS: "true",
        AUTH_JWT_ALGORITHMS: "RS256,HS256",
        AUTH_JWT_SECRET: "s".repeat(40),
      },
      { clock },
    );
    await expectInvalid(app, await mint({}, rsa, { alg: "HS256", secret: new TextEncoder().encode(pem) }), "bad signature");
    await expectOk(app, await mint({}, rsa, { alg: "HS256", secret: new TextEncoder().encode("s".repeat(40)) }));
    await expectOk(app, await mint({}, rsa));
  });

  it("refuses an unknown key id", async () => {
    await start();
    const other = await makeKey("ES256", "nobody-knows-me");
    await expectInvalid(app!, await mint({}, other), "unknown key");
  });

  it("ignores a key embedded in the header (`jwk`): the key set decides", async () => {
    await start();
    const attacker = await makeKey("ES256", "k1");
    const withJwk = (kid: string) =>
      new SignJWT({ iss: ISS, aud: AUD, sub: "admin", iat: nowS(), exp: nowS() + 600 })
        .setProtectedHeader({ alg: "ES256", kid, jwk: attacker.jwk })
        .sign(attacker.privateKey);
    await expectInvalid(app!, await withJwk("k1"), "bad signature");
    await expectInvalid(app!, await withJwk("attacker"), "unknown key");
  });

  it("refuses header members of the wrong type with 401 (alg not a string, kid not a string)", async () => {
    await start();
    const payload = `{${stdMembers()},"sub":"u1"}`;
    await expectInvalid(app!, await signRaw(`{"alg":["ES256"],"kid":"k1"}`, payload, es), "algorithm not allowed");
    await expectInvalid(app!, await signRaw(`{"alg":null,"kid":"k1"}`, payload, es), "algorithm not allowed");
    const res = await app!.fetch(guarded(await signRaw(`{"alg":"ES256","kid":5}`, payload, es)));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^Invalid bearer token: [a-z ]+\.$/);
  });

  it("refuses a token signed by a 1024-bit RSA key in the set with 401, never 500", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 1024 });
    const jwk = { ...(publicKey.export({ format: "jwk" }) as JWK), kid: "weak", alg: "RS256", use: "sig" };
    issuer.keys = [es.jwk, jwk];
    await start();
    // jose will not sign with a short key, so the token is signed by hand with node:crypto.
    const input = `${b64(JSON.stringify({ alg: "RS256", kid: "weak" }))}.${b64(`{${stdMembers()},"sub":"u1"}`)}`;
    const token = `${input}.${b64(nodeSign("sha256", Buffer.from(input), privateKey))}`;
    const res = await app!.fetch(guarded(token));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^Invalid bearer token: [a-z ]+\.$/);
    await expectOk(app!, await mint({}, es)); // the weak key spoils nothing else
  });
});

// ---------------------------------------------------------------------------------------------
// Malformed tokens
// ---------------------------------------------------------------------------------------------

describe("jwt: malformed tokens", () => {
  it("refuses tokens that are not three base64url parts", async () => {
    await start();
    const good = await mint({}, es);
    const [h, p, s] = good.split(".");
    for (const bad of ["abc", `${h}.${p}`, `${good}.${s}`, `${h}..${s}`, `${h}.${p}.${s}!`, `${h}.${p}+/.${s}`, "a.b.c", `${h} .${p}.${s}`]) {
      await expectInvalid(app!, bad, "malformed token");
    }
  });

  it("refuses padded base64 (`=`) in a part that would otherwise verify", async () => {
    await start();
    // Find a payload whose base64url length is not a multiple of 4, so padding can be added.
    let token = "";
    for (let i = 0; ; i++) {
      token = await mint({ pad: "x".repeat(i) }, es);
      if (token.split(".")[1]!.length % 4 !== 0) break;
    }
    await expectOk(app!, token);
    const [h, p, s] = token.split(".");
    const padded = `${p}${"=".repeat((4 - (p!.length % 4)) % 4)}`;
    await expectInvalid(app!, `${h}.${padded}.${s}`, "malformed token");
  });

  it("refuses a payload or header that is not a JSON object", async () => {
    await start();
    await expectInvalid(app!, await signPayloadText(`{"sub":"u1",`, es), "malformed token");
    await expectInvalid(app!, await signPayloadText(`["u1"]`, es), "malformed token");
    await expectInvalid(app!, await signPayloadText(`"u1"`, es), "malformed token");
    await expectInvalid(app!, await signRaw(`{"alg":"ES256","kid":"k1"`, `{${stdMembers()},"sub":"u1"}`, es), "malformed token");
    // Not UTF-8.
    const bytes = `${b64(JSON.stringify({ alg: "ES256", kid: "k1" }))}.${Buffer.from([0x7b, 0xff, 0x7d]).toString("base64url")}`;
    await expectInvalid(app!, `${bytes}.c2ln`, "malformed token");
  });

  it("refuses a token over 16384 characters; one of exactly 16384 is read", async () => {
    await start();
    await expectInvalid(app!, await mint({ pad: "x".repeat(17_000) }, es), "token too long");
    // Hit exactly 16384 characters: base64url lengths are computed, then the header's spacing
    // (valid JSON whitespace) and the padding claim are chosen so the total is exact.
    const b64len = (text: string) => Math.ceil((Buffer.byteLength(text) * 4) / 3);
    const sigLen = 86; // ES256: 64 bytes
    const payloadOf = (n: number) => `{${stdMembers()},"sub":"u1","pad":"${"x".repeat(n)}"}`;
    let exact: { header: string; n: number } | undefined;
    for (let spaces = 0; spaces < 4 && !exact; spaces++) {
      const header = `{"alg":"ES256",${" ".repeat(spaces)}"kid":"k1"}`;
      for (let n = 12_000; n < 12_400 && !exact; n++) if (b64len(header) + 1 + b64len(payloadOf(n)) + 1 + sigLen === 16384) exact = { header, n };
    }
    const token = await signRaw(exact!.header, payloadOf(exact!.n), es);
    expect(token.length).toBe(16384);
    await expectOk(app!, token);
    const over = await signRaw(exact!.header, payloadOf(exact!.n + 1), es);
    expect(over.length).toBeGreaterThan(16384);
    await expectInvalid(app!, over, "token too long");
  });

  it("refuses duplicate members in the payload (`{\"sub\":\"u1\",\"sub\":\"admin\"}`), escaped spellings too", async () => {
    await start();
    await expectOk(app!, await signPayloadText(`{${stdMembers()},"sub":"u1"}`, es));
    await expectInvalid(app!, await signPayloadText(`{"sub":"u1",${stdMembers()},"sub":"admin"}`, es), "malformed token");
    await expectInvalid(app!, await signPayloadText(`{"sub":"u1",${stdMembers()},"s\\u0075b":"admin"}`, es), "malformed token");
    await expectInvalid(app!, await signPayloadText(`{"sub":"u1",${stdMembers()},"act":{"sub":"a","sub":"b"}}`, es), "malformed token");
    // Same names in different objects are not duplicates.
    await expectOk(app!, await signPayloadText(`{"sub":"u1",${stdMembers()},"realm":{"sub":"x","iss":"y"}}`, es));
  });

  it("refuses duplicate members in the header (hand-built, really signed)", async () => {
    await start();
    const payload = `{${stdMembers()},"sub":"u1"}`;
    await expectOk(app!, await signRaw(`{"alg":"ES256","kid":"k1"}`, payload, es));
    await expectInvalid(app!, await signRaw(`{"alg":"ES256","alg":"ES256","kid":"k1"}`, payload, es), "malformed token");
    await expectInvalid(app!, await signRaw(`{"alg":"ES256","kid":"zz","kid":"k1"}`, payload, es), "malformed token");
  });

  it("refuses a token with a `crit` header", async () => {
    await start();
    await expectInvalid(app!, await signRaw(`{"alg":"ES256","kid":"k1","crit":["exp"],"exp":1}`, `{${stdMembers()},"sub":"u1"}`, es), "malformed token");
  });
});

// ---------------------------------------------------------------------------------------------
// Principal claim
// ---------------------------------------------------------------------------------------------

describe("jwt: principal claim", () => {
  it("refuses a token without a usable principal claim (missing, empty, not a string)", async () => {
    await start();
    await expectInvalid(app!, await mint({ sub: undefined }, es), "no principal claim");
    await expectInvalid(app!, await mint({ sub: "" }, es), "no principal claim");
    await expectInvalid(app!, await mint({ sub: 5 as never }, es), "no principal claim");
    await expectInvalid(app!, await mint({ sub: ["u1"] as never }, es), "no principal claim");
    await expectInvalid(app!, await mint({ sub: { id: "u1" } as never }, es), "no principal claim");
  });

  it("answers 500 (logged) for a principal claim breaking the id rule: over 256 characters, control characters", async () => {
    await start();
    await expect500(app!, await mint({ sub: "u".repeat(257) }, es));
    await expect500(app!, await mint({ sub: "u1\u0007" }, es));
    await expect500(app!, await mint({ sub: "u1\u0085x" }, es));
  });

  it("accepts 256 characters, counted as code points (256 emoji)", async () => {
    await start();
    await expectOk(app!, await mint({ sub: "u".repeat(256) }, es));
    await expectOk(app!, await mint({ sub: "😀".repeat(256) }, es));
  });

  it("reads AUTH_JWT_PRINCIPAL_CLAIM, dotted path allowed", async () => {
    await start({ AUTH_JWT_PRINCIPAL_CLAIM: "ext.uid" });
    expect((await principalSeen(app!, await mint({ ext: { uid: "from-ext" } }, es))).id).toBe("from-ext");
    await expectInvalid(app!, await mint({ sub: "u1" }, es), "no principal claim");
  });
});

// ---------------------------------------------------------------------------------------------
// Actor claim and delegation (5.6)
// ---------------------------------------------------------------------------------------------

describe("jwt: actor claim and delegation rules", () => {
  it("refuses malformed actor claims with 401 `invalid actor claim`, never reading them as the user's own", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*" });
    const bad: unknown[] = [null, { sub: "" }, "agent", 5, [], [{ sub: "a" }], {}, { sub: 5 }, { sub: "a", act: { sub: 5 } }, { sub: "a", act: null }, { sub: "a", act: "b" }, { sub: "a", act: { sub: "b", act: {} } }];
    for (const act of bad) await expectInvalid(app!, await mint({ act } as never, es), "invalid actor claim");
  });

  it("refuses an actor id breaking the id rule (control character, over 256 characters) as `invalid actor claim`", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*" });
    await expectInvalid(app!, await mint({ act: { sub: "agent\u0001" } }, es), "invalid actor claim");
    await expectInvalid(app!, await mint({ act: { sub: "a".repeat(257) } }, es), "invalid actor claim");
    await expectInvalid(app!, await mint({ act: { sub: "a", act: { sub: "b\n" } } }, es), "invalid actor claim");
  });

  it("refuses a chain one deeper than AUTH_MAX_DELEGATION_DEPTH with 401 `delegation too deep`", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*", AUTH_MAX_DELEGATION_DEPTH: "2" });
    await expectOk(app!, await mint({ act: { sub: "a", act: { sub: "b" } } }, es));
    await expectInvalid(app!, await mint({ act: { sub: "a", act: { sub: "b", act: { sub: "c" } } } }, es), "delegation too deep");
  });

  it("defaults to a depth of 3", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*" });
    await expectOk(app!, await mint({ act: { sub: "a", act: { sub: "b", act: { sub: "c" } } } }, es));
    await expectInvalid(app!, await mint({ act: { sub: "a", act: { sub: "b", act: { sub: "c", act: { sub: "d" } } } } }, es), "delegation too deep");
  });

  it("refuses a very deep chain as 401 (no crash, no stack blow-up)", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*" });
    let act: Record<string, unknown> = { sub: "a0" };
    for (let i = 1; i < 40; i++) act = { sub: `a${i}`, act };
    await expectInvalid(app!, await mint({ act }, es), "delegation too deep");
  });

  it("answers 403 for an actor not in AUTH_ALLOWED_ACTORS (default: none)", async () => {
    await start();
    const res = await app!.fetch(guarded(await mint({ act: { sub: "agent-x" } }, es)));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "Delegated caller agent-x is not allowed here" });
    expect(res.headers.get("www-authenticate")).toBeNull();
    await app!.close();
    await start({ AUTH_ALLOWED_ACTORS: "agent-a,agent-b" });
    const other = await app!.fetch(guarded(await mint({ act: { sub: "agent-x", act: { sub: "agent-a" } } }, es)));
    expect(other.status).toBe(403);
    expect(await other.json()).toEqual({ detail: "Delegated caller agent-x is not allowed here" });
    await expectOk(app!, await mint({ act: { sub: "agent-b" } }, es));
  });

  it("allows any actor with AUTH_ALLOWED_ACTORS=*", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*" });
    await expectOk(app!, await mint({ act: { sub: "anyone" } }, es));
  });

  it("reads the outermost act.sub as the actor and nested ones as the chain, keeping only lent roles", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "agent-a", AUTH_DELEGATED_ROLES: "reader,viewer" });
    const delegated = await principalSeen(app!, await mint({ sub: "user-1", roles: ["reader", "admin", "viewer"], act: { sub: "agent-a", act: { sub: "agent-0" } } }, es));
    expect(delegated.id).toBe("user-1");
    expect(delegated.roles).toEqual(["reader", "viewer"]);
    expect(delegated.actor).toEqual({ id: "agent-a", chain: ["agent-0"], client: null });
    expect(delegated.attributes).toEqual({ "@actor": { id: "agent-a", chain: ["agent-0"], client: null } });
    expect(app!.logs.some((l) => l.actor === "agent-a")).toBe(true); // the actor reaches the logs (5.6)
    expect(app!.rawLogs.join("\n")).not.toContain("user-1"); // principal ids are hashed
    // The same user calling directly keeps every role.
    const direct = await principalSeen(app!, await mint({ sub: "user-1", roles: ["reader", "admin", "viewer"] }, es));
    expect(direct.roles).toEqual(["reader", "admin", "viewer"]);
    expect(direct.actor).toBeNull();
  });

  it("keeps no roles for a delegated request when AUTH_DELEGATED_ROLES is empty", async () => {
    await start({ AUTH_ALLOWED_ACTORS: "*" });
    expect((await principalSeen(app!, await mint({ roles: ["admin"], act: { sub: "agent-a" } }, es))).roles).toEqual([]);
  });

  it("AUTH_JWT_ACTOR_CLAIM empty reads a token with `act` as the user's own", async () => {
    await start({ AUTH_JWT_ACTOR_CLAIM: "" });
    const p = await principalSeen(app!, await mint({ sub: "user-2", roles: ["admin"], act: { sub: "agent-a" } }, es));
    expect(p.actor).toBeNull();
    expect(p.roles).toEqual(["admin"]);
    await expectOk(app!, await mint({ act: null } as never, es)); // not read at all
  });

  it("reads AUTH_JWT_ACTOR_CLAIM by dotted path", async () => {
    await start({ AUTH_JWT_ACTOR_CLAIM: "ext.act", AUTH_ALLOWED_ACTORS: "*" });
    expect((await principalSeen(app!, await mint({ ext: { act: { sub: "agent-z" } } }, es))).actor).toEqual({ id: "agent-z", chain: [], client: null });
    await expectInvalid(app!, await mint({ ext: { act: { sub: "" } } }, es), "invalid actor claim");
  });
});

// ---------------------------------------------------------------------------------------------
// Roles claim
// ---------------------------------------------------------------------------------------------

describe("jwt: roles claim", () => {
  it("reads a list, a space-separated string and a comma-separated string", async () => {
    await start();
    expect((await principalSeen(app!, await mint({ roles: ["a", "b"] }, es))).roles).toEqual(["a", "b"]);
    expect((await principalSeen(app!, await mint({ roles: "a b  c" }, es))).roles).toEqual(["a", "b", "c"]);
    expect((await principalSeen(app!, await mint({ roles: "a,b, c" }, es))).roles).toEqual(["a", "b", "c"]);
    expect((await principalSeen(app!, await mint({ roles: ["a", 5, "", "x,y"] }, es))).roles).toEqual(["a"]);
    expect((await principalSeen(app!, await mint({}, es))).roles).toEqual([]);
  });

  it("reads a dotted path (AUTH_JWT_ROLES_CLAIM=realm.roles)", async () => {
    await start({ AUTH_JWT_ROLES_CLAIM: "realm.roles" });
    expect((await principalSeen(app!, await mint({ realm: { roles: ["ops", "dev"] }, roles: ["ignored"] }, es))).roles).toEqual(["ops", "dev"]);
    expect((await principalSeen(app!, await mint({ realm: "nope" }, es))).roles).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Presenting clients (AUTH_JWT_DIRECT_CLIENTS)
// ---------------------------------------------------------------------------------------------

describe("jwt: AUTH_JWT_DIRECT_CLIENTS", () => {
  it("treats a listed client as direct and another client without act as actor `client:<client>`", async () => {
    await start({ AUTH_JWT_DIRECT_CLIENTS: "web" });
    expect((await principalSeen(app!, await mint({ azp: "web" }, es))).actor).toBeNull();
    const res = await app!.fetch(guarded(await mint({ azp: "cli" }, es)));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "Delegated caller client:cli is not allowed here" });
    // `client_id` is read when azp is absent.
    const viaClientId = await app!.fetch(guarded(await mint({ client_id: "cli" }, es)));
    expect(viaClientId.status).toBe(403);
    // No client claim at all: the user's own token.
    await expectOk(app!, await mint({}, es));
  });

  it("lets an allowed client through as a delegated principal", async () => {
    await start({ AUTH_JWT_DIRECT_CLIENTS: "web", AUTH_ALLOWED_ACTORS: "client:cli", AUTH_DELEGATED_ROLES: "reader" });
    const p = await principalSeen(app!, await mint({ azp: "cli", roles: ["reader", "admin"] }, es));
    expect(p.actor).toEqual({ id: "client:cli", chain: [], client: "cli" });
    expect(p.roles).toEqual(["reader"]);
  });

  it("keeps the presenting client on an explicit actor", async () => {
    await start({ AUTH_JWT_DIRECT_CLIENTS: "web", AUTH_ALLOWED_ACTORS: "agent-a" });
    expect((await principalSeen(app!, await mint({ azp: "cli", act: { sub: "agent-a" } }, es))).actor).toEqual({ id: "agent-a", chain: [], client: "cli" });
  });

  it("with no direct clients listed, every client's token is the user's own", async () => {
    await start();
    expect((await principalSeen(app!, await mint({ azp: "cli" }, es))).actor).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// PEM key and HS secret
// ---------------------------------------------------------------------------------------------

describe("jwt: AUTH_JWT_PUBLIC_KEY and HS secrets", () => {
  it("verifies with a SPKI PEM given with literal `\\n` escapes, and fetches no JWK set", async () => {
    const pem = (await exportSPKI(rsa.publicKey)).trim().replace(/\n/g, "\\n");
    expect(pem).not.toContain("\n");
    app = await makeApp({ AUTH_POLICY: "jwt", AUTH_JWT_PUBLIC_KEY: pem, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD }, { clock });
    await expectOk(app, await mint({}, rsa));
    await expectOk(app, await mint({ sub: "u9" }, rsa, { kid: null }));
    const otherRsa = await makeKey("RS256", "r1");
    await expectInvalid(app, await mint({}, otherRsa), "bad signature");
    expect(issuer.count).toBe(0);
  });

  it("verifies with an EC SPKI PEM when AUTH_JWT_ALGORITHMS=ES256", async () => {
    const pem = (await exportSPKI(es.publicKey)).trim().replace(/\n/g, "\\n");
    app = await makeApp({ AUTH_POLICY: "jwt", AUTH_JWT_PUBLIC_KEY: pem, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD, AUTH_JWT_ALGORITHMS: "ES256" }, { clock });
    await expectOk(app, await mint({}, es));
    await expectInvalid(app, await mint({}, stranger), "bad signature");
  });

  // Regression: the startup check imports the PEM only with the first allowed algorithm, so an EC key under RS256,ES256 stops startup.
  it("verifies with an EC SPKI PEM under the default algorithms (RS256,ES256)", async () => {
    const pem = (await exportSPKI(es.publicKey)).trim().replace(/\n/g, "\\n");
    app = await makeApp({ AUTH_POLICY: "jwt", AUTH_JWT_PUBLIC_KEY: pem, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD }, { clock });
    await expectOk(app, await mint({}, es));
  });

  it("verifies HS256 with AUTH_JWT_ALLOW_HS=true, AUTH_JWT_ALGORITHMS=HS256 and a 32-byte secret", async () => {
    const secret = "0123456789abcdef0123456789abcdef";
    app = await makeApp(
      { AUTH_POLICY: "jwt", AUTH_JWT_ALLOW_HS: "true", AUTH_JWT_ALGORITHMS: "HS256", AUTH_JWT_SECRET: secret, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD },
      { clock },
    );
    const enc = new TextEncoder();
    await expectOk(app, await mint({}, es, { alg: "HS256", secret: enc.encode(secret), kid: null }));
    await expectInvalid(app, await mint({}, es, { alg: "HS256", secret: enc.encode(`${secret}x`), kid: null }), "bad signature");
    await expectInvalid(app, await mint({}, es), "algorithm not allowed"); // ES256 not listed
  });

  it("refuses to start with an HS algorithm unless opted in, or a short secret", async () => {
    const base = { AUTH_POLICY: "jwt", AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD };
    await expect(makeApp({ ...base, AUTH_JWT_ALGORITHMS: "HS256", AUTH_JWT_SECRET: "x".repeat(32) })).rejects.toThrow(/AUTH_JWT_ALLOW_HS/);
    await expect(makeApp({ ...base, AUTH_JWT_ALLOW_HS: "true", AUTH_JWT_ALGORITHMS: "HS256", AUTH_JWT_SECRET: "x".repeat(31) })).rejects.toThrow(/AUTH_JWT_SECRET/);
    await expect(makeApp({ ...base, AUTH_JWT_ALGORITHMS: "none" })).rejects.toThrow(/AUTH_JWT_ALGORITHMS/);
    await expect(makeApp({ ...base, AUTH_JWT_JWKS_URL: issuer.url, AUTH_JWT_PUBLIC_KEY: "x" })).rejects.toThrow(/AUTH_JWT_PUBLIC_KEY/);
  });

  it("refuses to start outside dev with a PEM that is not a public key", async () => {
    await expect(makeApp({ AUTH_POLICY: "jwt", AUTH_JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----", AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD })).rejects.toThrow(
      /AUTH_JWT_PUBLIC_KEY/,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Misconfiguration
// ---------------------------------------------------------------------------------------------

describe("jwt: misconfiguration", () => {
  it("refuses to start outside dev without key source, issuer and audience, naming each problem", async () => {
    const error = await makeApp({ AUTH_POLICY: "jwt" }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toMatch(/AUTH_JWT_JWKS_URL or AUTH_JWT_PUBLIC_KEY/);
    expect(error!.message).toMatch(/AUTH_JWT_ISSUER/);
    expect(error!.message).toMatch(/AUTH_JWT_AUDIENCE/);
  });

  it("refuses a plain-http non-loopback JWKS URL outside dev unless AUTH_JWT_ALLOW_HTTP_JWKS=true", async () => {
    await expect(makeApp(jwtEnv({ AUTH_JWT_JWKS_URL: "http://issuer.example.test/jwks" }))).rejects.toThrow(/AUTH_JWT_JWKS_URL/);
    app = await makeApp(jwtEnv({ AUTH_JWT_JWKS_URL: "http://issuer.example.test/jwks", AUTH_JWT_ALLOW_HTTP_JWKS: "true" }));
  });

  it("never starts with an unknown AUTH_POLICY value, dev included", async () => {
    await expect(makeApp({ AUTH_POLICY: "JWT" })).rejects.toThrow(/AUTH_POLICY/);
    await expect(makeApp({ AUTH_POLICY: "none", APP_ENV: "dev" })).rejects.toThrow(/AUTH_POLICY/);
  });

  it("under APP_ENV=dev starts, logs the problem, answers guarded routes 503 and /health 200", async () => {
    app = await makeApp({ AUTH_POLICY: "jwt", APP_ENV: "dev" }, { clock });
    expect((await app.fetch(new Request("http://test/health"))).status).toBe(200);
    for (const req of [guarded(await mint({}, es)), guarded(undefined), new Request("http://test/chat", { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } })]) {
      const res = await app.fetch(req);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { detail: string; error_id: string };
      expect(body.error_id).toMatch(/^[0-9a-f]{16}$/);
      expect(typeof body.detail).toBe("string");
    }
    expect(app.logs.some((l) => /AUTH_JWT_JWKS_URL or AUTH_JWT_PUBLIC_KEY/.test(String(l.message ?? l.msg ?? JSON.stringify(l))))).toBe(true);
  });

  it("refuses to start outside dev with `auth: forward` lacking forward_audience under jwt (5.8); starts under dev", async () => {
    const policyText = JSON.stringify({ apis: { svc: { base_url_env: "SVC_URL", auth: "forward", allowed_methods: ["*"] } } });
    await expect(makeApp(jwtEnv({ SVC_URL: "http://127.0.0.1:9" }), { clock, policyText })).rejects.toThrow(/forward_audience/);
    app = await makeApp(jwtEnv({ SVC_URL: "http://127.0.0.1:9", APP_ENV: "dev" }), { clock, policyText });
    await expectOk(app, await mint({}, es));
  });
});

// ---------------------------------------------------------------------------------------------
// auth: forward with forward_audience (5.8)
// ---------------------------------------------------------------------------------------------

describe("jwt: auth forward with forward_audience", () => {
  let upstream: Server;
  let upstreamUrl = "";
  const received: IncomingHttpHeaders[] = [];
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      received.push(req.headers);
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ ok: true }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });
  beforeEach(() => {
    received.length = 0;
  });

  const callSvc = defineTool({
    name: "call_svc",
    description: "Calls the svc API once.",
    parameters: { type: "object", properties: {} },
    calls: [],
    run: async (_args, ctx) => (await ctx.api.request("svc", { method: "GET", path: "/me" } as ApiRequest)) as never,
  });
  const policyText = () => JSON.stringify({ apis: { svc: { base_url_env: "SVC_URL", auth: "forward", forward_audience: "svc-api", allowed_methods: ["GET"] } } });

  async function callWith(token: string) {
    const { res, events, text } = await chat(app!, { message: "/call call_svc {}" }, bearer(token));
    expect(res.status, text).toBe(200);
    expect(events.at(-1)?.event).toBe("message.end");
    const r = events.find((e) => e.event === "tool.result")!;
    return r.data as { result: string; is_error: boolean };
  }

  it("forwards the caller's own token when its aud names the forward audience", async () => {
    await start({ SVC_URL: upstreamUrl, AUTH_JWT_AUDIENCE: `${AUD},svc-api` }, { tools: [callSvc], policyText: policyText() });
    const token = await mint({ aud: [AUD, "svc-api"] }, es);
    const r = await callWith(token);
    expect(r.is_error, r.result).toBe(false);
    expect(received).toHaveLength(1);
    expect(received[0]!.authorization).toBe(`Bearer ${token}`);
    expect(app!.rawLogs.join("\n")).not.toContain(token.split(".")[2]!);
  });

  it("a custom policy's attributes.credentials[svc] is forwarded to an `auth: forward` API and never logged", async () => {
    const secret = "custom-forward-s3cr3t";
    app = await makeApp(
      { AUTH_POLICY: "custom", LOG_LEVEL: "DEBUG", SVC_URL: upstreamUrl },
      {
        clock,
        tools: [callSvc, whoami],
        policyText: JSON.stringify({ apis: { svc: { base_url_env: "SVC_URL", auth: "forward", allowed_methods: ["GET"] } } }),
        authPolicy: { authenticate: () => ({ id: "user-c", attributes: { credentials: { svc: `Token ${secret}` } } }) },
      },
    );
    const r = await callWith("anything");
    expect(r.is_error, r.result).toBe(false);
    expect(received).toHaveLength(1);
    expect(received[0]!.authorization).toBe(`Token ${secret}`);
    expect((await principalSeen(app, "anything")).attributes).toEqual({});
    expect(app.rawLogs.join("\n")).not.toContain(secret);
  });

  it("refuses (ApiPolicyError, nothing sent) when the token's aud lacks the forward audience", async () => {
    await start({ SVC_URL: upstreamUrl }, { tools: [callSvc], policyText: policyText() });
    const r = await callWith(await mint({ aud: AUD }, es));
    expect(r.is_error).toBe(true);
    expect(r.result).toMatch(/^ApiPolicyError: /);
    expect(r.result).toContain("audience");
    expect(received).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// CORS on guarded routes
// ---------------------------------------------------------------------------------------------

describe("CORS with CORS_ALLOWED_ORIGINS", () => {
  const LISTED = "https://app.example.test";
  const OTHER = "https://evil.example.test";

  const preflight = (origin: string) =>
    new Request("http://test/chat", { method: "OPTIONS", headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type" } });

  it("answers a preflight from a listed origin 204 with Access-Control-Allow-Origin, another origin 403", async () => {
    await start({ CORS_ALLOWED_ORIGINS: LISTED });
    const ok = await app!.fetch(preflight(LISTED));
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe(LISTED);
    expect(ok.headers.get("access-control-allow-methods")).toMatch(/POST/);
    expect(ok.headers.get("access-control-allow-headers")).toMatch(/Authorization/i);
    const bad = await app!.fetch(preflight(OTHER));
    expect(bad.status).toBe(403);
    expect(bad.headers.get("access-control-allow-origin")).toBeNull();
    expect(issuer.count).toBe(0); // preflights need no credential
  });

  it("refuses a guarded request from an unlisted origin even with a valid credential; serves the listed one", async () => {
    await start({ CORS_ALLOWED_ORIGINS: LISTED });
    const token = await mint({}, es);
    const bad = await app!.fetch(guarded(token, { Origin: OTHER }));
    expect(bad.status).toBe(403);
    expect(await bad.json()).toEqual({ detail: "This origin is not allowed." });
    expect(bad.headers.get("access-control-allow-origin")).toBeNull();
    const ok = await app!.fetch(guarded(token, { Origin: LISTED }));
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe(LISTED);
  });

  it("allows a same-origin request and a request without Origin", async () => {
    await start({ CORS_ALLOWED_ORIGINS: LISTED });
    const token = await mint({}, es);
    const same = await app!.fetch(guarded(token, { Origin: "http://test" }));
    expect(same.status).toBe(200);
    await expectOk(app!, token);
  });

  it("without CORS_ALLOWED_ORIGINS refuses every cross-origin guarded request and preflight", async () => {
    await start();
    const token = await mint({}, es);
    const res = await app!.fetch(guarded(token, { Origin: LISTED }));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "This origin is not allowed." });
    expect((await app!.fetch(preflight(LISTED))).status).toBe(403);
    expect((await app!.fetch(guarded(token, { Origin: "http://test" }))).status).toBe(200);
  });

  it("still authenticates first: an unlisted origin without a credential is a 401", async () => {
    await start({ CORS_ALLOWED_ORIGINS: LISTED });
    const res = await app!.fetch(guarded(undefined, { Origin: OTHER }));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    // From the listed origin the 401 carries the CORS header, so the browser app can read it.
    const listed = await app!.fetch(guarded(undefined, { Origin: LISTED }));
    expect(listed.status).toBe(401);
    expect(listed.headers.get("access-control-allow-origin")).toBe(LISTED);
  });
});

// ---------------------------------------------------------------------------------------------
// Custom policy (5.4)
// ---------------------------------------------------------------------------------------------

describe("custom auth policy through createApp({ authPolicy })", () => {
  const SECRET = "svc-credential-s3cr3t-value";

  const policy = (over: Partial<CustomAuthPolicy> = {}): CustomAuthPolicy => ({
    authenticate(request) {
      const h = request.headers.get("authorization");
      if (h === null) throw new AuthError(401, "Missing token.", { invalid: false });
      if (h === "Bearer bad") throw new AuthError(401, "Bad token.");
      if (h === "Bearer down") throw new AuthError(503, "Issuer unreachable.");
      if (h === "Bearer ctl") return { id: "user\u0001x" };
      if (h === "Bearer long") return { id: "u".repeat(257) };
      if (h === "Bearer agent") return { id: "user-7", roles: ["r1", "r2"], actor: { id: "agent-q", chain: [], client: null } };
      return { id: "user-7", roles: ["r1"], attributes: { team: "blue", credentials: { svc: SECRET } } };
    },
    ...over,
  });

  async function startCustom(custom: CustomAuthPolicy, env: Record<string, string> = {}, tools: Tool[] = [whoami]) {
    app = await makeApp({ AUTH_POLICY: "custom", LOG_LEVEL: "DEBUG", ...env }, { clock, authPolicy: custom, tools });
    return app;
  }

  it("passes the principal to tools without `credentials`, and never logs the secret", async () => {
    await startCustom(policy());
    const p = await principalSeen(app!, "ok");
    expect(p).toEqual({ id: "user-7", roles: ["r1"], attributes: { team: "blue" }, actor: null });
    expect(JSON.stringify(p)).not.toContain(SECRET);
    const threads = await app!.fetch(guarded("ok"));
    expect(threads.status).toBe(200);
    expect(await threads.text()).not.toContain(SECRET);
    expect(app!.rawLogs.length).toBeGreaterThan(0);
    expect(app!.rawLogs.join("\n")).not.toContain(SECRET);
  });

  it("answers 403 when authorize returns false, passing the action", async () => {
    const seen: string[] = [];
    await startCustom(
      policy({
        authorize: (_p, action) => {
          seen.push(action);
          return action !== "thread.list";
        },
      }),
    );
    const res = await app!.fetch(guarded("ok"));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/thread\.list/);
    expect(seen).toEqual(["thread.list"]);
    await principalSeen(app!, "ok"); // chat.send still allowed
  });

  it("refuses to start outside dev when startup_problems() names a problem; under dev answers 503", async () => {
    const custom = policy({ startup_problems: () => ["x"] });
    await expect(makeApp({ AUTH_POLICY: "custom" }, { authPolicy: custom })).rejects.toThrow(/x/);
    await startCustom(custom, { APP_ENV: "dev" });
    expect((await app!.fetch(new Request("http://test/health"))).status).toBe(200);
    const res = await app!.fetch(guarded("ok"));
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error_id: string }).error_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it("maps a thrown AuthError: 401 `Bearer` without error code, invalid_token, 503", async () => {
    await startCustom(policy());
    const missing = await app!.fetch(guarded(undefined));
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe("Bearer");
    expect(await missing.json()).toEqual({ detail: "Missing token." });
    const bad = await app!.fetch(guarded("bad"));
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect(await bad.json()).toEqual({ detail: "Bad token." });
    const down = await app!.fetch(guarded("down"));
    expect(down.status).toBe(503);
    const body = (await down.json()) as { detail: string; error_id: string };
    expect(body.detail).toBe("Issuer unreachable.");
    // Every 503 carries a reference (spec 7.1), logged with the error's type.
    expect(body.error_id).toMatch(/^[0-9a-f]{16}$/);
    expect(app!.logs.some((l) => l.error_id === body.error_id && l.level === "WARNING")).toBe(true);
  });

  it("answers 500 (logged) for an id with a control character or over 256 characters", async () => {
    await startCustom(policy());
    await expect500(app!, "ctl");
    await expect500(app!, "long");
  });

  it("honours the permissions a custom principal carries (403 `Not permitted: <action>.`)", async () => {
    await startCustom({ authenticate: () => ({ id: "reader-1", permissions: ["thread.list"] }) });
    expect((await app!.fetch(guarded("any"))).status).toBe(200);
    const { res, json } = await chat(app!, { message: "hi" }, bearer("any"));
    expect(res.status).toBe(403);
    expect(json).toEqual({ detail: "Not permitted: chat.send." });
  });

  it("answers 500 when authenticate returns a non-string id or throws a plain error", async () => {
    await startCustom({ authenticate: (r) => (r.headers.get("authorization") === "Bearer boom" ? Promise.reject(new Error("db down: postgres://svc:secret-conn-string@db/users")) : { id: 42 as never }) });
    await expect500(app!, "num");
    await expect500(app!, "boom");
    // The message is logged under the error id so an operator can act on it, secrets masked.
    expect(app!.logs.some((l) => l.detail === "Error: db down: postgres://svc:<redacted>@db/users")).toBe(true);
    expect(app!.rawLogs.join("\n")).not.toContain("secret-conn-string");
  });

  it("applies the delegation rules to a custom policy's actor (403 unless allowed; lent roles only)", async () => {
    await startCustom(policy());
    const res = await app!.fetch(guarded("agent"));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "Delegated caller agent-q is not allowed here" });
    await app!.close();
    await startCustom(policy(), { AUTH_ALLOWED_ACTORS: "agent-q", AUTH_DELEGATED_ROLES: "r2" });
    const p = await principalSeen(app!, "agent");
    expect(p.roles).toEqual(["r2"]);
    expect(p.actor).toEqual({ id: "agent-q", chain: [], client: null });
  });

  // Regression: the auth fit is judged by AUTH_POLICY, not the policy in use, so a given custom policy with `auth: forward` stops startup.
  it("starts with an `auth: forward` API when a custom policy is given without AUTH_POLICY=custom", async () => {
    const policyText = JSON.stringify({ apis: { svc: { base_url_env: "SVC_URL", auth: "forward", allowed_methods: ["*"] } } });
    app = await makeApp({ SVC_URL: "http://127.0.0.1:9" }, { authPolicy: policy(), policyText });
  });
});
