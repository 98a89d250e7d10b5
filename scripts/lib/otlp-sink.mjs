// A loopback OTLP/HTTP sink for benchmarks: answers every POST 200 and discards the body, in a
// worker thread of its own, so the receiving side does not share the event loop of the service
// being measured (as a real collector would not). Counts requests and bytes.
//
//   const sink = await startOtlpSink();  // sink.url, await sink.counts() -> { requests, bytes }, await sink.close()
import http from "node:http";
import { isMainThread, parentPort, Worker } from "node:worker_threads";

if (!isMainThread && parentPort) {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on("data", (chunk) => (bytes += chunk.length));
    req.on("end", () => {
      requests++;
      res.writeHead(200, { "content-type": req.headers["content-type"] ?? "application/x-protobuf", "content-length": "0" });
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => parentPort.postMessage({ type: "ready", port: server.address().port }));
  parentPort.on("message", (msg) => {
    if (msg?.type === "counts") parentPort.postMessage({ type: "counts", requests, bytes });
    else if (msg?.type === "close") {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

export function startOtlpSink() {
  const worker = new Worker(new URL(import.meta.url));
  const next = (type) => new Promise((resolve) => {
    const on = (msg) => {
      if (msg?.type !== type) return;
      worker.off("message", on);
      resolve(msg);
    };
    worker.on("message", on);
  });
  return next("ready").then(({ port }) => ({
    url: `http://127.0.0.1:${port}`,
    counts() {
      const reply = next("counts");
      worker.postMessage({ type: "counts" });
      return reply.then(({ requests, bytes }) => ({ requests, bytes }));
    },
    close() {
      const exited = new Promise((resolve) => worker.once("exit", resolve));
      worker.postMessage({ type: "close" });
      return exited;
    },
  }));
}
