/**
 * A JWKS fetch cut by its timeout is logged as a timeout (error_type TimeoutError), whether the
 * issuer stalls before its headers or in the middle of its body, and answers "issuer
 * unavailable"; never as a key set that is too large, and never with the issuer's words.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IssuerUnavailable, JwksCache } from "../../src/auth/jwt/keys.js";
import { systemClock } from "../../src/clock.js";
import type { LogFields, Logger } from "../../src/observability/logger.js";

let server: Server;
let origin = "";

beforeAll(async () => {
  server = createServer((req, res) => {
    // Never answered: the headers never come.
    if (req.url === "/silent") return;
    // The headers and the start of a key set, then nothing more.
    res.writeHead(200, { "Content-Type": "application/json" });
    res.write('{"keys":[{"kty":"EC",');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function recordingLogger(lines: { level: string; message: string; fields?: LogFields }[]): Logger {
  const logger: Logger = {
    debug: (message, fields) => void lines.push({ level: "debug", message, fields }),
    info: (message, fields) => void lines.push({ level: "info", message, fields }),
    warning: (message, fields) => void lines.push({ level: "warning", message, fields }),
    error: (message, fields) => void lines.push({ level: "error", message, fields }),
    child: () => logger,
  };
  return logger;
}

describe("JWKS fetch timeout", () => {
  for (const [stall, path] of [
    ["before its headers", "/silent"],
    ["in the middle of its body", "/stalled-body"],
  ] as const) {
    it(`an issuer that stalls ${stall} is logged as a TimeoutError`, async () => {
      const lines: { level: string; message: string; fields?: LogFields }[] = [];
      const cache = new JwksCache({ url: `${origin}${path}`, fetch, clock: systemClock, cacheMs: 60_000, logger: recordingLogger(lines), timeoutMs: 150 });
      await expect(cache.resolve({ alg: "ES256", kid: "k1" })).rejects.toBeInstanceOf(IssuerUnavailable);
      expect(lines).toEqual([{ level: "warning", message: "JWKS fetch failed", fields: { error_type: "TimeoutError" } }]);
    });
  }
});
