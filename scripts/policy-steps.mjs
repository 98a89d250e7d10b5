// What single steps of the policy client's call cost against the bare call, all on 127.0.0.1.
//
//   npx tsx scripts/policy-steps.mjs [--rounds 5] [--n 10000] [--warmup-calls 5000]
//
// A diagnostic beside bench:policy, with no target: bench:policy says what the whole client adds
// to a bare call; this says what a step of it adds when the bare call takes it on. Each variant is
// the bare call of bench:policy (the Node entry's outbound fetch, src/runtime/outbound.ts, then
// `res.json()`) with one step done the client's way, against a node:http upstream answering a
// small JSON body:
//   manual   passes `redirect: "manual"`, as every call of the client does
//   reader   reads the body through a reader with a cap (readCapped), then decodes and parses it
//   headers  copies the answer's headers into a plain record (Headers#forEach), as `exchange` does
//   get      reads one header (the content type) instead
// Sequential calls in blocks of 20, bare first then each variant, the order reversed every other
// group; a round's figure for a variant is the median over the groups of its block's mean minus
// the bare block's (bench:policy's pairing), and one line per round shows them all.
import { performance } from "node:perf_hooks";
import { nodeOutboundFetch } from "../src/runtime/outbound.ts";
import { readCapped } from "../src/streams.ts";
import { benchOptions, closeServer, jsonUpstream, log, median, runMain, watchdog } from "./lib/bench.mjs";

const opts = benchOptions(process.argv.slice(2), {
  name: "policy-steps",
  usage: "usage: npx tsx scripts/policy-steps.mjs [--rounds 5] [--n 10000] [--warmup-calls 5000]\n",
  numbers: { rounds: 5, n: 10_000, "warmup-calls": 5000 },
});
opts.rounds = Math.max(1, Math.floor(opts.rounds));
opts.n = Math.max(20, Math.floor(opts.n));
watchdog("policy-steps", 10 * 60 * 1000);

const ANSWER = JSON.stringify({ id: "42", name: "widget", price: 12.5, tags: ["a", "b"], ok: true });
const BLOCK = 20;
const CONNECT_MS = 1000;
const tooLarge = () => new Error("answer too large");
const decoder = new TextDecoder();

function variants(send, url) {
  const check = (body) => {
    if (body.id !== "42") throw new Error("unexpected answer");
  };
  return {
    bare: async () => check(await (await send(url, { connectTimeoutMs: CONNECT_MS })).json()),
    manual: async () => check(await (await send(url, { redirect: "manual", connectTimeoutMs: CONNECT_MS })).json()),
    reader: async () => {
      const res = await send(url, { connectTimeoutMs: CONNECT_MS });
      check(JSON.parse(decoder.decode(await readCapped(res.body, 64 * 1024 * 1024, tooLarge))));
    },
    headers: async () => {
      const res = await send(url, { connectTimeoutMs: CONNECT_MS });
      const headers = {};
      res.headers.forEach((value, name) => {
        if (name !== "set-cookie") headers[name] = value;
      });
      check(await res.json());
    },
    get: async () => {
      const res = await send(url, { connectTimeoutMs: CONNECT_MS });
      if (!res.headers.get("content-type")) throw new Error("no content type");
      check(await res.json());
    },
  };
}

async function main() {
  const { server, port } = await jsonUpstream(ANSWER);
  try {
    const steps = variants(nodeOutboundFetch(), `http://127.0.0.1:${port}/items/42?limit=10`);
    const names = Object.keys(steps);
    log(`policy-steps: node ${process.version}, ${opts.rounds} rounds of ${opts.n} calls of each (+${opts.warmupCalls} warm-up), blocks of ${BLOCK}`);
    for (let i = 0; i < Math.max(1, opts.warmupCalls); i++) for (const name of names) await steps[name]();
    for (let round = 1; round <= opts.rounds; round++) {
      const means = names.map(() => []);
      for (let done = 0, group = 0; done < opts.n; done += BLOCK, group++) {
        const order = group % 2 === 0 ? names.map((_, k) => k) : names.map((_, k) => k).reverse();
        for (const k of order) {
          const t0 = performance.now();
          for (let i = 0; i < BLOCK; i++) await steps[names[k]]();
          means[k].push((performance.now() - t0) / BLOCK);
        }
      }
      const base = median(means[0]);
      const added = names.slice(1).map((name, j) => `${name} ${(median(means[j + 1].map((m, g) => m - means[0][g])) * 1000).toFixed(2)} µs`);
      log(`round ${round}: bare ${(base * 1000).toFixed(1)} µs a call (median of its blocks); added: ${added.join(", ")}`);
    }
  } finally {
    await closeServer(server);
  }
}

runMain("policy-steps", main);
