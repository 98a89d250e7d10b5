// Waiting conversations for the memory figures: /chat streams held open on loopback, shared by
// scripts/bench-chat.mjs and scripts/heap-garbage.mjs.
import http from "node:http";
import { performance } from "node:perf_hooks";

/**
 * Opens `count` POST /chat streams on 127.0.0.1:`port` with `headers` and `body` (at most 256
 * connecting at once) and waits for message.start on each: `{ started, failed, openSeconds,
 * heartbeats, close() }`, the heartbeats counted as they are read.
 */
export async function openIdleStreams(port, count, { headers, body }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const requests = [];
  let started = 0;
  let failed = 0;
  let heartbeats = 0;
  let next = 0;
  const openOne = () =>
    new Promise((resolve) => {
      let settled = false;
      const settle = (ok) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (ok) started++;
        else failed++;
        resolve();
      };
      const req = http.request({ host: "127.0.0.1", port, path: "/chat", method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } });
      const timer = setTimeout(() => {
        req.destroy();
        settle(false);
      }, 30_000);
      req.on("response", (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return settle(false);
        }
        res.setEncoding("utf8");
        let seen = "";
        res.on("data", (chunk) => {
          if (settled) {
            // keep reading, drop the text; count the heartbeats
            if (chunk.includes(": keep-alive")) heartbeats++;
            return;
          }
          seen += chunk;
          if (seen.includes("event: message.start")) settle(true);
        });
        res.on("end", () => settle(false));
        res.on("error", () => settle(false));
      });
      req.on("error", () => settle(false));
      req.end(body);
      requests.push(req);
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(256, count) }, async () => {
      while (next < count) {
        next++;
        await openOne();
      }
    }),
  );
  const openSeconds = (performance.now() - t0) / 1000;
  return {
    started,
    failed,
    openSeconds,
    get heartbeats() {
      return heartbeats;
    },
    close() {
      for (const req of requests) req.destroy();
      agent.destroy();
    },
  };
}

/**
 * Opens half of `streams`, waits `settleMs`, reads `rss()` (if given), opens the rest: the
 * handles together, how many the first half held and the RSS read between the halves.
 */
export async function openInHalves(port, streams, request, { rss = async () => NaN, settleMs = 2000 } = {}) {
  const first = await openIdleStreams(port, Math.floor(streams / 2), request);
  await new Promise((r) => setTimeout(r, settleMs));
  const half = await rss();
  const second = await openIdleStreams(port, streams - Math.floor(streams / 2), request);
  return {
    half,
    halfCount: first.started,
    started: first.started + second.started,
    failed: first.failed + second.failed,
    get heartbeats() {
      return first.heartbeats + second.heartbeats;
    },
    close() {
      first.close();
      second.close();
    },
  };
}
