// Benchmark of authentication cost: requests/s of an authenticated GET /threads under
// AUTH_POLICY=shared-bearer and AUTH_POLICY=jwt (ES256, JWK set from a loopback server), same run.
//
//   npx tsup --silent && node scripts/bench-auth.mjs [--seconds 10] [--connections 50]
//       [--warmup 1] [--tokens 12000] [--rounds 1]
//
// Each app is built from dist/index.js with `createApp({ env, logWrite: () => {} })` and
// LOG_LEVEL=WARNING, served in this process by @hono/node-server on 127.0.0.1 (port 0), and driven
// by autocannon in a worker thread (autocannon's `workers: 1`, as bench-chat.mjs does), so the
// load generator does not share the server's event loop.
//
// Targets:
//   shared-bearer   one API key.
//   jwt             one ES256 token (SignJWT, valid for an hour, iss/aud as configured): after the
//                   first request it is served from the policy's verified-token cache.
//   jwt-rotating    every request carries the next of `--tokens` pre-minted tokens, handed out by a
//                   setupRequest module (a shared counter in the worker). The policy caches at most
//                   10,000 verified tokens and evicts the oldest, so cycling through more than that
//                   (default 12,000) makes every request miss the cache: this is the rate of full
//                   signature verification. (Cycling through 2,000 would be cached after one lap.)
//
// `--rounds N` alternates shared-bearer and jwt N times (both servers stay up) and reports every
// round's ratio and their median: on a busy machine one pair of 10 s runs is noisy. Finally each
// app's per-request cost is measured in process (app.fetch, one request at a time, no sockets),
// which a loaded machine disturbs far less.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { autocannonInWorker, benchOptions, closeServer, listen, loadDist, log, median, runMain, watchdog } from "./lib/bench.mjs";

// ---------------------------------------------------------------------------------------------
// options

function options(argv) {
  const opts = benchOptions(argv, {
    name: "bench-auth",
    usage: "usage: node scripts/bench-auth.mjs [--seconds 10] [--connections 50] [--warmup 1] [--tokens 12000] [--rounds 1]\n",
    numbers: { seconds: 10, connections: 50, warmup: 1, tokens: 12_000, rounds: 1 },
  });
  opts.seconds = Math.max(1, Math.floor(opts.seconds));
  opts.connections = Math.max(1, Math.floor(opts.connections));
  opts.warmup = Math.floor(opts.warmup);
  opts.tokens = Math.max(1, Math.floor(opts.tokens));
  opts.rounds = Math.min(10, Math.max(1, Math.floor(opts.rounds)));
  return opts;
}

const opts = options(process.argv.slice(2));

// A watchdog, so the run always ends.
watchdog("bench-auth", (opts.warmup + opts.seconds) * (2 * opts.rounds + 1) * 1000 + 3 * 60 * 1000);

const ISS = "https://issuer.bench.test";
const AUD = "agent-api";
const API_KEY = "bench-key-0123456789";
const BASE_ENV = { MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "WARNING" };
/** The verified-token cache size of src/auth/jwt/policy.ts (CACHE_MAX). */
const POLICY_TOKEN_CACHE = 10_000;

// ---------------------------------------------------------------------------------------------
// helpers

/** autocannon in one worker thread; `request` is either headers or a setupRequest module path. */
function cannon(url, seconds, request) {
  return autocannonInWorker(url, seconds, {
    method: "GET",
    connections: opts.connections,
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.setupRequest ? { requests: [{ method: "GET", path: "/threads", setupRequest: request.setupRequest }] } : {}),
  });
}

/** One measured run against a listening server: a warm-up, then `--seconds` of load. */
async function bench(name, port, request) {
  const url = `http://127.0.0.1:${port}/threads`;
  if (opts.warmup > 0) await cannon(url, opts.warmup, request);
  const r = await cannon(url, opts.seconds, request);
  const out = {
    name,
    rps: r.requests.mean,
    total: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    p50: r.latency.p50,
    p99: r.latency.p99,
  };
  log(
    `${name.padEnd(13)} ${out.rps.toFixed(0).padStart(6)} req/s mean (${out.total} 2xx, ${out.non2xx} non-2xx, ${out.errors} errors, ${out.timeouts} timeouts), ` +
      `latency p50 ${out.p50} ms p99 ${out.p99} ms`,
  );
  return out;
}

/** An app on its own server; the credential is checked by one request before any load. */
async function target(name, createApp, env, bearer) {
  const app = await createApp({ env, logWrite: () => {} });
  const { server, port } = await listen(app.fetch);
  const res = await fetch(`http://127.0.0.1:${port}/threads`, { headers: { authorization: `Bearer ${bearer}` } });
  await res.arrayBuffer();
  const stop = async () => {
    await closeServer(server);
    await app.close();
  };
  if (res.status !== 200) {
    await stop();
    throw new Error(`${name}: GET /threads answered ${res.status}, not 200`);
  }
  return { name, app, port, stop };
}

/**
 * Microseconds per GET /threads through app.fetch, one at a time (no sockets, no load generator):
 * `warm` requests first, then `bearers.length` measured ones, each with the bearer at its index.
 */
async function inProcess(app, warm, bearers) {
  const run = async (list) => {
    const t0 = performance.now();
    for (const bearer of list) {
      const res = await app.fetch(new Request("http://bench/threads", { headers: { authorization: `Bearer ${bearer}` } }));
      if (res.status !== 200) throw new Error(`in-process GET /threads answered ${res.status}`);
      await res.arrayBuffer();
    }
    return ((performance.now() - t0) * 1000) / list.length;
  };
  await run(warm);
  return run(bearers);
}

// ---------------------------------------------------------------------------------------------
// the loopback issuer: serves the JWK set and counts fetches

async function startIssuer(jwk) {
  const issuer = { count: 0, url: "", server: undefined };
  issuer.server = createServer((req, res) => {
    if (req.url === "/jwks") {
      issuer.count++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => issuer.server.listen(0, "127.0.0.1", resolve));
  issuer.url = `http://127.0.0.1:${issuer.server.address().port}/jwks`;
  return issuer;
}

// ---------------------------------------------------------------------------------------------
// main

async function main() {
  const { createApp } = await loadDist();
  log(
    `bench-auth: node ${process.version}, GET /threads, ${opts.connections} connections x ${opts.seconds} s (+${opts.warmup} s warm-up) per target, ` +
      `autocannon in a worker thread`,
  );

  // Keys, issuer, tokens.
  const kid = "bench-es256";
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  const issuer = await startIssuer(jwk);
  const nowS = Math.floor(Date.now() / 1000);
  const mint = (sub, jti) =>
    new SignJWT({ roles: ["user"], ...(jti ? { jti } : {}) })
      .setProtectedHeader({ alg: "ES256", kid, typ: "JWT" })
      .setIssuer(ISS)
      .setAudience(AUD)
      .setSubject(sub)
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + 3600)
      .sign(privateKey);
  const token = await mint("bench-user");
  const t0 = performance.now();
  const rotating = [];
  for (let i = 0; i < opts.tokens; i++) rotating.push(await mint(`bench-user-${i % 100}`, `t${i}`));
  const mintMs = performance.now() - t0;
  log(
    `minted 1 + ${opts.tokens} ES256 tokens (${(opts.tokens / (mintMs / 1000)).toFixed(0)} signatures/s); ` +
      `rotating set ${opts.tokens > POLICY_TOKEN_CACHE ? ">" : "<="} the policy's ${POLICY_TOKEN_CACHE}-token cache` +
      (opts.tokens > POLICY_TOKEN_CACHE ? " (every rotating request misses it)" : " (WARNING: rotating tokens get cached after one lap)"),
  );

  // The setupRequest module the autocannon worker requires: a shared counter over the tokens file.
  const dir = mkdtempSync(join(tmpdir(), "bench-auth-"));
  const tokensFile = join(dir, "tokens.json");
  const setupRequest = join(dir, "rotate.cjs");
  writeFileSync(tokensFile, JSON.stringify(rotating));
  writeFileSync(
    setupRequest,
    `const tokens = JSON.parse(require("node:fs").readFileSync(${JSON.stringify(tokensFile)}, "utf8"));
let next = 0;
module.exports = function setupRequest(request) {
  const token = tokens[next++ % tokens.length];
  request.headers = { ...request.headers, authorization: "Bearer " + token };
  return request;
};
`,
  );

  const jwtEnv = {
    ...BASE_ENV,
    AUTH_POLICY: "jwt",
    AUTH_JWT_JWKS_URL: issuer.url,
    AUTH_JWT_ISSUER: ISS,
    AUTH_JWT_AUDIENCE: AUD,
    AUTH_JWT_ALGORITHMS: "ES256",
  };

  const targets = [];
  try {
    const shared = await target("shared-bearer", createApp, { ...BASE_ENV, AUTH_POLICY: "shared-bearer", API_KEY }, API_KEY);
    targets.push(shared);
    const jwt = await target("jwt", createApp, jwtEnv, token);
    targets.push(jwt);
    const sharedRuns = [];
    const jwtRuns = [];
    for (let round = 1; round <= opts.rounds; round++) {
      if (opts.rounds > 1) log(`round ${round}/${opts.rounds}`);
      sharedRuns.push(await bench("shared-bearer", shared.port, { headers: { authorization: `Bearer ${API_KEY}` } }));
      jwtRuns.push(await bench("jwt", jwt.port, { headers: { authorization: `Bearer ${token}` } }));
    }
    const jwksFetchesJwt = issuer.count;
    await jwt.stop();
    targets.splice(targets.indexOf(jwt), 1);

    const rotTarget = await target("jwt-rotating", createApp, jwtEnv, rotating[0]);
    targets.push(rotTarget);
    const rot = await bench("jwt-rotating", rotTarget.port, { setupRequest });
    const jwksFetchesRot = issuer.count - jwksFetchesJwt;

    // In process: per-request cost without sockets. Cached paths: 20,000 requests with one
    // credential; uncached: a fresh jwt app, warmed with 500 tokens, then 4,000 tokens it never saw.
    const N = 20_000;
    const usShared = await inProcess(shared.app, Array(1000).fill(API_KEY), Array(N).fill(API_KEY));
    const inProcessJwt = async (warm, bearers) => {
      const app = await createApp({ env: jwtEnv, logWrite: () => {} });
      try {
        return await inProcess(app, warm, bearers);
      } finally {
        await app.close();
      }
    };
    const usJwt = await inProcessJwt(Array(1000).fill(token), Array(N).fill(token));
    const cut = Math.min(500, Math.floor(rotating.length / 2));
    const usRot = await inProcessJwt(rotating.slice(0, cut), rotating.slice(cut, cut + 4_000));

    const ratios = sharedRuns.map((r, i) => jwtRuns[i].rps / r.rps);
    const sharedRps = median(sharedRuns.map((r) => r.rps));
    const jwtRps = median(jwtRuns.map((r) => r.rps));
    const ratio = median(ratios);
    const ratioRot = rot.rps / sharedRps;
    log("");
    log(`JWK set fetches: ${jwksFetchesJwt} during jwt, ${jwksFetchesRot} during jwt-rotating (one app each; keys cached)`);
    log(`shared-bearer: ${sharedRps.toFixed(0)} req/s${opts.rounds > 1 ? ` (median of ${opts.rounds})` : ""}`);
    log(`jwt (one token, cached): ${jwtRps.toFixed(0)} req/s${opts.rounds > 1 ? ` (median of ${opts.rounds})` : ""}`);
    log(`jwt-rotating (${opts.tokens} tokens, uncached verification): ${rot.rps.toFixed(0)} req/s`);
    if (opts.rounds > 1) log(`ratio jwt/shared-bearer per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}`);
    log(`ratio jwt/shared-bearer: ${ratio.toFixed(2)} (target >= 0.90: ${ratio >= 0.9 ? "met" : "NOT met"})`);
    log(`ratio jwt-rotating/shared-bearer: ${ratioRot.toFixed(2)} (no target; full ES256 verification on every request)`);
    log(
      `in process (app.fetch, sequential): shared-bearer ${usShared.toFixed(1)} us/request, jwt cached ${usJwt.toFixed(1)} us/request ` +
        `(${(usShared / usJwt).toFixed(2)}x the shared-bearer rate), jwt uncached ${usRot.toFixed(1)} us/request`,
    );
    const bad = [...sharedRuns, ...jwtRuns, rot].reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0);
    if (bad > 0) log(`warning: ${bad} non-2xx answers, errors or timeouts in total`);
  } finally {
    for (const t of targets) await t.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    await new Promise((resolve) => issuer.server.close(() => resolve()));
  }
}

runMain("bench-auth", main);
