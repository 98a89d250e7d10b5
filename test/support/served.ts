/**
 * Instances of the service served on 127.0.0.1 (port 0) by @hono/node-server, for tests where
 * instances call each other. A slot listens first, so its URL is known before its app is made:
 * the card names the URL the instance is really reached at (APP_URL), and two instances can
 * point at each other.
 */
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import type { TestApp } from "../helpers.js";

export interface Served {
  readonly base: string;
  readonly app: TestApp;
  /** `METHOD /path` of every request the instance received, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export interface Slot {
  readonly base: string;
  /** Makes the app this slot serves (answers 503 until then). */
  start(make: (base: string) => Promise<TestApp>): Promise<Served>;
}

export async function slot(): Promise<Slot> {
  let target: TestApp | undefined;
  const requests: string[] = [];
  const handle = (req: Request) => {
    requests.push(`${req.method} ${new URL(req.url).pathname}`);
    return target ? target.fetch(req) : new Response("starting", { status: 503 });
  };
  const server: ServerType = serve({ fetch: handle, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((r) => (server.listening ? r() : server.once("listening", () => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    async start(make) {
      const app = await make(base);
      target = app;
      return {
        base,
        app,
        requests,
        async close() {
          await new Promise<void>((r) => server.close(() => r()));
          await app.close();
        },
      };
    },
  };
}

export async function served(make: (base: string) => Promise<TestApp>): Promise<Served> {
  return (await slot()).start(make);
}
