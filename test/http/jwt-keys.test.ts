/**
 * JWK-set handling of AUTH_POLICY=jwt (spec 5.3 "Key handling", 7.1 503): against a loopback
 * issuer that counts its requests and can be switched to failing, holding or redirecting, with a
 * clock the tests move. One fetch at a time; redirects never followed; an unknown key id
 * refetches at most once per 30 s; an expired cache refreshes in the background while cached
 * keys keep verifying; an unreachable issuer leaves the last good keys usable one more hour,
 * then 503 `{detail, error_id}`.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { makeApp, type TestApp } from "../helpers.js";
import {
  advance,
  AUD,
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
  T0,
  waitUntil,
} from "./jwt-fixtures.js";

const UNREACHABLE = "The token issuer is unreachable and no usable keys are left.";

const issuer = new Issuer();
let k1: KeyPair;
let k2: KeyPair; // published only when a test adds it
let k3: KeyPair; // never published

beforeAll(async () => {
  await issuer.start();
  [k1, k2, k3] = await Promise.all([makeKey("ES256", "k1"), makeKey("ES256", "k2"), makeKey("ES256", "k3")]);
});
afterAll(async () => issuer.stop());

let app: TestApp | undefined;
beforeEach(() => {
  clock.t = T0;
  issuer.reset([k1.jwk]);
});
afterEach(async () => {
  issuer.release();
  await app?.close();
  app = undefined;
});

async function start(extra: Record<string, string> = {}): Promise<TestApp> {
  app = await makeApp({ AUTH_POLICY: "jwt", AUTH_JWT_JWKS_URL: issuer.url, AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD, ...extra }, { clock });
  return app;
}

/** A token good for two hours of clock time from now. */
const fresh = (key: KeyPair, sub = "u1") => mint({ sub, exp: Math.floor(clock.t / 1000) + 7200 }, key);

describe("JWKS: fetching", () => {
  it("fetches lazily, once, and reuses the keys for later tokens", async () => {
    await start();
    expect(issuer.count).toBe(0);
    await expectOk(app!, await fresh(k1, "a"));
    await expectOk(app!, await fresh(k1, "b"));
    await expectOk(app!, await fresh(k1, "c"));
    expect(issuer.count).toBe(1);
  });

  it("shares one fetch among concurrent first requests", async () => {
    await start();
    issuer.delayMs = 150;
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => fresh(k1, `user-${i}`)));
    const answers = await Promise.all(tokens.map((t) => app!.fetch(guarded(t))));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(issuer.count).toBe(1);
  });

  it("never follows a redirect: 503, and the redirect target is never requested", async () => {
    issuer.mode = "redirect";
    issuer.movedKeys = [k1.jwk]; // keys that WOULD verify the token
    await start();
    await expectUnavailable(app!, await fresh(k1), UNREACHABLE);
    expect(issuer.count).toBeGreaterThanOrEqual(1);
    expect(issuer.paths).not.toContain("/moved");
  });

  it("answers 503 when the first fetch fails (500, connection dropped, not a key set, a key set over 1 MiB), and recovers once the issuer answers", async () => {
    await start();
    for (const mode of ["500", "down", "not-a-set", "huge"] as const) {
      issuer.mode = mode;
      await expectUnavailable(app!, await fresh(k1, `u-${mode}`), UNREACHABLE);
      advance(31); // a failing issuer is asked again at most once per 30 s
    }
    issuer.mode = "ok";
    await expectOk(app!, await fresh(k1, "u-ok"));
  });

  it("logs a failed fetch without the URL's answer or any token", async () => {
    await start();
    issuer.mode = "500";
    const token = await fresh(k1);
    await expectUnavailable(app!, token);
    expect(app!.logs.some((l) => /JWKS fetch failed/.test(JSON.stringify(l)))).toBe(true);
    expect(app!.rawLogs.join("\n")).not.toContain(token.split(".")[2]!);
  });
});

describe("JWKS: a failing issuer", () => {
  it("a stale key set with a failing issuer is refetched at most once per 30 s, and the outage is logged once", async () => {
    await start({ AUTH_JWT_JWKS_CACHE_S: "60" });
    await expectOk(app!, await fresh(k1));
    issuer.mode = "500";
    advance(61);
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => fresh(k1, `s-${i}`)));
    for (let round = 0; round < 15; round++) for (const t of tokens) expect((await app!.fetch(guarded(t))).status).toBe(200);
    await waitUntil(() => issuer.count >= 2);
    expect(issuer.count).toBe(2); // the first fetch, and one refresh for 300 requests
    advance(31);
    await expectOk(app!, tokens[0]!);
    await waitUntil(() => issuer.count >= 3);
    expect(issuer.count).toBe(3);
    expect(app!.logs.filter((l) => /JWKS fetch failed/.test(String(l.message)))).toHaveLength(1);
    // The issuer is back: the next refresh it is asked (a fetch still in flight may yet fail and
    // start another 30 s) brings a line saying so.
    issuer.mode = "ok";
    const recovered = () => app!.logs.some((l) => l.message === "JWKS fetch succeeded again");
    for (let i = 0; i < 5 && !recovered(); i++) {
      advance(31);
      await expectOk(app!, tokens[1]!);
      await waitUntil(() => recovered() || issuer.count >= 4 + i).catch(() => undefined);
    }
    await waitUntil(recovered);
    expect(app!.logs.filter((l) => /JWKS fetch failed/.test(String(l.message)))).toHaveLength(1);
  });
});

describe("JWKS: unknown key ids", () => {
  it("refetches at most once per 30 s for unknown key ids", async () => {
    await start();
    await expectOk(app!, await fresh(k1));
    expect(issuer.count).toBe(1);

    await expectInvalid(app!, await fresh(k3, "x1"), "unknown key");
    expect(issuer.count).toBe(2); // one refetch
    advance(10);
    await expectInvalid(app!, await fresh(k3, "x2"), "unknown key");
    advance(19);
    await expectInvalid(app!, await fresh(k3, "x3"), "unknown key");
    expect(issuer.count).toBe(2); // still within 30 s: no refetch
    advance(2); // 31 s after the refetch
    await expectInvalid(app!, await fresh(k3, "x4"), "unknown key");
    expect(issuer.count).toBe(3);
    await expectOk(app!, await fresh(k1, "still-fine"));
    expect(issuer.count).toBe(3);
  });

  it("picks up a key newly published at the issuer through the unknown-kid refetch", async () => {
    await start();
    await expectOk(app!, await fresh(k1));
    expect(issuer.count).toBe(1);
    issuer.keys = [k1.jwk, k2.jwk];
    await expectOk(app!, await fresh(k2));
    expect(issuer.count).toBe(2);
    await expectOk(app!, await fresh(k2, "again"));
    await expectOk(app!, await fresh(k1, "old-key"));
    expect(issuer.count).toBe(2);
  });

  it("a key published within 30 s of the last refetch waits for the next window", async () => {
    await start();
    await expectOk(app!, await fresh(k1));
    await expectInvalid(app!, await fresh(k2, "early"), "unknown key"); // refetch: k2 not there yet
    issuer.keys = [k1.jwk, k2.jwk];
    advance(5);
    await expectInvalid(app!, await fresh(k2, "still-early"), "unknown key");
    expect(issuer.count).toBe(2);
    advance(26);
    await expectOk(app!, await fresh(k2, "now"));
    expect(issuer.count).toBe(3);
  });
});

describe("JWKS: cache expiry and background refresh", () => {
  it("refreshes an expired cache in the background while cached keys keep verifying", async () => {
    await start({ AUTH_JWT_JWKS_CACHE_S: "60" });
    await expectOk(app!, await fresh(k1, "first"));
    expect(issuer.count).toBe(1);

    advance(30);
    await expectOk(app!, await fresh(k1, "within"));
    expect(issuer.count).toBe(1); // not expired yet

    advance(31); // 61 s: expired
    issuer.mode = "hold"; // the refresh will hang until released
    issuer.keys = [k1.jwk, k2.jwk]; // served by the refresh
    await expectOk(app!, await fresh(k1, "during-refresh")); // answered while the refresh hangs
    await waitUntil(() => issuer.holding === 1);
    expect(issuer.count).toBe(2);
    await expectOk(app!, await fresh(k1, "during-refresh-2"));
    expect(issuer.count).toBe(2); // one fetch at a time

    issuer.release();
    issuer.mode = "ok";
    // The refreshed set is used: k2 verifies without another fetch.
    await waitUntil(() => issuer.holding === 0);
    await new Promise((r) => setTimeout(r, 20));
    await expectOk(app!, await fresh(k2, "new-key"));
    expect(issuer.count).toBe(2);
  });

  it("a verified token is not trusted past the key set's life without looking at the keys again", async () => {
    await start({ AUTH_JWT_JWKS_CACHE_S: "60" });
    const token = await fresh(k1);
    await expectOk(app!, token);
    issuer.mode = "down";
    advance(60 * 60 + 61); // past the cache time and the grace hour
    await expectUnavailable(app!, token, UNREACHABLE);
  });
});

describe("JWKS: issuer unreachable and the grace hour", () => {
  for (const mode of ["down", "500"] as const) {
    it(`keeps the last good keys usable for one hour after expiry, then 503 (issuer ${mode})`, async () => {
      await start({ AUTH_JWT_JWKS_CACHE_S: "60" });
      const token = await fresh(k1);
      await expectOk(app!, token);
      expect(issuer.count).toBe(1);

      issuer.mode = mode;
      advance(61); // T0 + 61 s, expired: the background refresh fails, the keys stay good
      await expectOk(app!, await fresh(k1, "a"));
      await waitUntil(() => issuer.count >= 2);
      advance(1800); // T0 + 1861 s
      await expectOk(app!, await fresh(k1, "b"));
      advance(3659 - 1861); // T0 + 3659 s: one second short of expiry (60 s) plus the grace hour
      await expectOk(app!, await fresh(k1, "c"));
      await expectOk(app!, token);

      advance(2); // T0 + 3661 s: past the grace hour
      await expectUnavailable(app!, await fresh(k1, "d"), UNREACHABLE);
      await expectUnavailable(app!, token, UNREACHABLE);

      issuer.mode = "ok"; // the issuer is back: once it is asked again (30 s after the last failure), requests are served again
      advance(31);
      await expectOk(app!, await fresh(k1, "e"));
    });
  }

  it("past the grace hour an unknown kid is still a 503, not a 401, while the issuer is down", async () => {
    await start({ AUTH_JWT_JWKS_CACHE_S: "60" });
    await expectOk(app!, await fresh(k1));
    issuer.mode = "down";
    advance(60 + 3600 + 1);
    await expectUnavailable(app!, await fresh(k3), UNREACHABLE);
  });
});
