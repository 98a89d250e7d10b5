import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { serve, type ServerType } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY, makeApp, type TestApp } from "../helpers.js";

const exec = promisify(execFile);
const CLI = resolve("dist/agentcli.js");
let app: TestApp;
let server: ServerType;
let url: string;

beforeAll(async () => {
  app = await makeApp();
  await new Promise<void>((ready) => {
    server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => {
      url = `http://127.0.0.1:${info.port}`;
      ready();
    });
  });
});
afterAll(async () => {
  server?.close();
  await app?.close();
});

const cli = (args: string[], env: Record<string, string>, cwd = process.cwd()) =>
  exec(process.execPath, [CLI, ...args, "--url", url], { env: { PATH: process.env.PATH ?? "", ...env }, cwd }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

describe("agentcli", () => {
  it("chats with the key from AGENTCLI_API_KEY and lists threads", async () => {
    const chat = await cli(["chat", "hello", "--thread", "cli-1"], { AGENTCLI_API_KEY: KEY });
    expect(chat.code).toBe(0);
    expect(chat.stdout).toContain("echo: hello");
    const threads = await cli(["threads"], { AGENTCLI_API_KEY: KEY });
    expect(JSON.parse(threads.stdout)).toEqual([expect.objectContaining({ thread_id: "cli-1" })]);
    const messages = await cli(["messages", "cli-1"], { AGENTCLI_API_KEY: KEY });
    expect(JSON.parse(messages.stdout)).toHaveLength(2);
  });

  it("never reads the key from an env file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentcli-"));
    writeFileSync(join(dir, ".env"), `AGENTCLI_API_KEY=${KEY}\n`);
    const res = await cli(["threads"], {}, dir);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("HTTP 401");
    expect(res.stderr).not.toContain(KEY);
  });

  it("refuses malformed --header and --cookie values", async () => {
    expect((await cli(["threads", "--header", "no-colon"], { AGENTCLI_API_KEY: KEY })).code).toBe(2);
    expect((await cli(["threads", "--cookie", "novalue"], { AGENTCLI_API_KEY: KEY })).code).toBe(2);
  });
});
