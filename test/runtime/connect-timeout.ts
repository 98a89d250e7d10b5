/**
 * A runtime's built entry with an API whose port never accepts a connection: the call fails at its
 * `timeouts_ms.connect` (300 ms), long before its read timeout (8 s). The entries whose outbound fetch
 * bounds connecting (Node and Deno: the undici package, src/runtime/outbound.ts) run it.
 */
import { spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { expect } from "vitest";
import { parseSse } from "../helpers.js";
import { type Entry, HOST, startEntry, stopEntry } from "../support/service-process.js";

const KEY = "connect-key-0123456789";

export async function expectConnectTimeoutToFailTheCall(entry: Entry): Promise<void> {
  // A listener that never accepts: once its one-slot backlog is full, further connections wait in SYN.
  const holder = spawn("python3", ["-c", "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)"]);
  const sockets: Socket[] = [];
  try {
    const port = await new Promise<number>((resolve) => holder.stdout!.once("data", (d) => resolve(Number(String(d).trim()))));
    for (let i = 0; i < 3; i++) sockets.push(connect(port, HOST).on("error", () => {}));
    await new Promise((r) => setTimeout(r, 200));
    const svc = await startEntry(entry, {
      API_KEY: KEY,
      MODEL_PROVIDER: "fake",
      MODEL_NAME: "fake",
      TOOLS_MODULE: "test/runtime/fixtures/slow-api-tool.mjs",
      API_POLICY_PATH: "test/runtime/fixtures/slow-api-policy.yaml",
      SLOW_URL: `http://${HOST}:${port}`,
    });
    try {
      const t0 = performance.now();
      const res = await fetch(`${svc.base}/chat`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ message: "/call get_slow {}" }),
      });
      const result = parseSse(await res.text()).find((e) => e.event === "tool.result")!;
      expect(result.data).toMatchObject({ is_error: true, result: expect.stringContaining("could not be reached within its connect timeout") });
      expect(performance.now() - t0).toBeLessThan(4_000); // the read timeout is 8 s
    } finally {
      await stopEntry(svc);
    }
  } finally {
    for (const s of sockets) s.destroy();
    holder.kill("SIGKILL");
  }
}
