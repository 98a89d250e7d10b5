import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeOutboundFetch } from "../../src/runtime/outbound.js";

/** What the loopback upstream saw of each request. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

describe("the Node entry's outbound fetch", () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        if (req.url === "/moved") {
          res.writeHead(302, { location: `${base}/elsewhere` });
          res.end();
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: true }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends every member of the init but the connect timeout, before and after undici is loaded, and leaves the init as given", async () => {
    const send = nodeOutboundFetch();
    const init = { method: "POST", headers: { "x-one": "1", "content-type": "application/json" }, body: '{"a":1}', redirect: "manual" as const, connectTimeoutMs: 1000 };
    const copy = structuredClone(init);
    seen.length = 0;
    // The first two go out while undici is still loading, the third after.
    const answers = await Promise.all([send(`${base}/items/1?x=1`, init), send(`${base}/items/2`, init)]);
    answers.push(await send(`${base}/items/3`, init));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ ok: true });
    }
    expect(seen.map((s) => s.url).sort()).toEqual(["/items/1?x=1", "/items/2", "/items/3"]);
    for (const s of seen) {
      expect(s).toMatchObject({ method: "POST", body: '{"a":1}' });
      expect(s.headers).toMatchObject({ "x-one": "1", "content-type": "application/json" });
      expect(Object.keys(s.headers).some((name) => name.toLowerCase().includes("timeout"))).toBe(false);
    }
    expect(init).toEqual(copy);
  });

  it("keeps redirect: manual (a 302 is answered, not followed)", async () => {
    const send = nodeOutboundFetch();
    seen.length = 0;
    const answer = await send(`${base}/moved`, { redirect: "manual", connectTimeoutMs: 1000 } as RequestInit);
    expect(answer.status).toBe(302);
    expect(seen.map((s) => s.url)).toEqual(["/moved"]);
  });

  it("answers a bad call with a rejected promise, never a throw", async () => {
    const send = nodeOutboundFetch();
    await send(`${base}/items/0`, { connectTimeoutMs: 1000 } as RequestInit);
    // undici is loaded now: the call goes the synchronous way and must still reject, not throw.
    const pending = send("not a url", { connectTimeoutMs: 1000 } as RequestInit);
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).rejects.toThrow();
  });
});
