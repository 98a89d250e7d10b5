/**
 * A runtime's built entry with an API that accepts calls and never answers: each call fails at its
 * `timeouts_ms.read` (300 ms), one after another, the deadlines kept on the client's one shared
 * timer there (src/policy/deadlines.ts). Used by the Node, Bun and Deno entry suites.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import { type Entry, startEntry, stopEntry } from "../support/service-process.js";

const KEY = "hang-key-0123456789";

export async function expectHangingCallsToTimeOut(entry: Entry): Promise<void> {
  const hanging = createServer(() => {});
  await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
  const svc = await startEntry(entry, {
    API_KEY: KEY,
    MODEL_PROVIDER: "fake",
    MODEL_NAME: "fake",
    TOOLS_MODULE: "test/runtime/fixtures/slow-api-tool.mjs",
    API_POLICY_PATH: "test/runtime/fixtures/hanging-api-policy.yaml",
    SLOW_URL: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
  });
  try {
    // Three calls in a row: the timer, armed for the first, must still fail the later ones on time.
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const res = await fetch(`${svc.base}/chat`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ message: "/call get_slow {}\n/answer done" }),
      });
      const text = await res.text();
      expect(text).toContain("did not answer within its timeout");
      expect(text).toMatch(/event: message\.end\ndata: \{[^\n]*"status":"ok"/);
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(300);
      expect(took).toBeLessThan(5_000);
    }
  } finally {
    expect(await stopEntry(svc)).toBe(0);
    hanging.closeAllConnections();
    await new Promise<void>((resolve) => hanging.close(() => resolve()));
  }
}
