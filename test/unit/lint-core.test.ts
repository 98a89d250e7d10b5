/**
 * scripts/lint-core.mjs (`npm run lint:core`) on small trees of its own: Node globals and Node
 * imports in a core file fail it with `file:line`, a clean file passes, and the same Node code
 * under runtime/ passes.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const exec = promisify(execFile);
const SCRIPT = resolve("scripts/lint-core.mjs");

const NODE_CODE = ['import fs from "node:fs";', "export const x = process.env.X;", "export const read = fs.readFileSync;", ""].join("\n");

const trees: string[] = [];
afterEach(() => {
  for (const t of trees.splice(0)) rmSync(t, { recursive: true, force: true });
});

/** A src/ tree of the given files; returns its path. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "lint-core-"));
  trees.push(root);
  for (const [name, text] of Object.entries(files)) {
    const file = join(root, "src", name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return join(root, "src");
}

async function lint(src: string) {
  try {
    const r = await exec(process.execPath, [SCRIPT, src]);
    return { code: 0, out: r.stdout + r.stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe("lint:core", () => {
  it("fails on a Node global and a node: import in a core file, naming file and line", async () => {
    const res = await lint(tree({ "core.ts": NODE_CODE }));
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/core\.ts:1: import of the Node built-in "node:fs"/);
    expect(res.out).toMatch(/core\.ts:2: Node global `process`/);
  });

  it("finds the other Node globals, globalThis.process, eval( and new Function(", async () => {
    const code = [
      "export const a = Buffer.from('x');",
      "export const b = (globalThis as { process?: unknown }).process;",
      "export const c = require('x');",
      "export const d = eval('1');",
      "export const e = new Function('return 1');",
      "export const f = typeof __dirname;",
      "setImmediate(() => {});",
      "export { readFile } from 'fs';",
      "",
    ].join("\n");
    const res = await lint(tree({ "deep/core.ts": code }));
    expect(res.code).toBe(1);
    for (const expected of [":1: Node global `Buffer`", ":2: Node global `globalThis.process`", ":3: Node global `require`", ":4: eval(", ":5: new Function(", ":6: Node global `__dirname`", ":7: Node global `setImmediate`", ':8: import of the Node built-in "fs"']) {
      expect(res.out).toContain(`core.ts${expected}`);
    }
  });

  it("passes on a clean core file, including local names and properties called process", async () => {
    const code = [
      'import { process } from "./steps.js";',
      "export function run(input: { process: string; env: unknown }, require: (s: string) => unknown) {",
      "  const Buffer = new Uint8Array(4);",
      "  const holder = { process: input.process, Buffer };",
      "  const { process: step } = { process };",
      "  return [process(input.process), require('x'), holder, step, new URL('https://x'), crypto.randomUUID()];",
      "}",
      "",
    ].join("\n");
    const res = await lint(tree({ "core.ts": code, "steps.ts": "export const process = (s: string) => s;\n" }));
    expect(res.out).not.toMatch(/core\.ts:\d+:/);
    expect(res.code).toBe(0);
  });

  it("passes on the same Node code under runtime/, cli/ and store/postgres/", async () => {
    const res = await lint(tree({ "runtime/node.ts": NODE_CODE, "cli/tool.ts": NODE_CODE, "store/postgres/connect.ts": NODE_CODE, "clean.ts": "export const one = 1;\n" }));
    expect(res.out).toContain("lint:core: 1 core files");
    expect(res.code).toBe(0);
  });
});
