/**
 * A loopback upstream for tools to call: records every request and answers each the same way.
 * Started in beforeAll and closed in afterAll of the file that calls `recordingUpstream()`.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import { afterAll, beforeAll } from "vitest";
import { defineTool } from "../../src/index.js";

export interface Hit {
  method: string;
  url: string;
  body: string;
  /** Header names in lower case. */
  headers: Record<string, string | string[] | undefined>;
}

export interface RecordingUpstream {
  /** `http://127.0.0.1:<port>`, once listening. */
  readonly base: string;
  /** Every request so far; tests clear it with `hits.length = 0`. */
  readonly hits: Hit[];
}

/** `{"created":true}` as JSON. */
export const created = (res: ServerResponse) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ created: true }));
};

/** `{}` with no content type. */
export const empty = (res: ServerResponse) => void res.end("{}");

/** `answer` may be async (a slow upstream); the request is recorded when its body has arrived. */
export function recordingUpstream(answer: (res: ServerResponse) => void | Promise<void> = created): RecordingUpstream {
  let server: Server;
  let base = "";
  const hits: Hit[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        hits.push({ method: req.method!, url: req.url!, body, headers: req.headers });
        void answer(res);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return {
    get base() {
      return base;
    },
    hits,
  };
}

/** A tool that POSTs `{ amount: 5 }` to /pay on the `bank` API and returns the status. */
export const payTool = defineTool({
  name: "pay",
  description: "pays",
  parameters: { type: "object" },
  calls: [{ api: "bank", method: "POST", path: "/pay" }],
  run: async (_a, ctx) => (await ctx.api.request("bank", { method: "POST", path: "/pay", body: { amount: 5 } })).status,
});

/** A policy for the `bank` API at BANK_URL whose POSTs wait for one of `approvers` (a YAML list). */
export const bankPolicy = (approvers: string) => `
apis:
  bank:
    base_url_env: BANK_URL
    auth: none
    allowed_methods: [POST]
    approval:
      required_for: { methods: [POST] }
      approvers: ${approvers}
`;
