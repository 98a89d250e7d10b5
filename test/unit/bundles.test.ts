/**
 * The build's two bundle checks, in `npm test` too (CI runs the test command, not the build):
 * the minified worker bundle gzips under 1 MiB (scripts/bundle-size.mjs, on dist/worker.js that
 * `npm test` builds first), and the core bundled for a neutral platform imports nothing from Node
 * (scripts/check-core-bundle.mjs). Each check is also shown failing on what it must refuse.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const run = (script: string) => execFileSync(process.execPath, [script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const attempt = (script: string, args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });

describe("bundles", () => {
  it("npm run build runs both checks after tsup, and npm run typecheck the core check", () => {
    const { scripts } = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
    expect(scripts.build!.split("&&").map((s) => s.trim())).toEqual(["tsup", "node scripts/bundle-size.mjs", "node scripts/check-core-bundle.mjs"]);
    expect(scripts["lint:bundle"]).toBe("node scripts/check-core-bundle.mjs");
    expect(scripts.typecheck).toContain("npm run --silent lint:bundle");
  });

  it("the worker bundle is minified and gzips under 1 MiB", () => {
    const line = run("scripts/bundle-size.mjs");
    expect(line).toMatch(/^dist\/worker\.js: [\d.]+ KiB, gzip [\d.]+ KiB \(under the 1024\.0 KiB limit\)\n$/);
    // minified: far below the 3 MB it was unminified
    expect(Number(/: ([\d.]+) KiB,/.exec(line)![1])).toBeLessThan(2048);
  });

  it("the size check fails on a bundle that gzips over 1 MiB", () => {
    const dir = mkdtempSync(join(tmpdir(), "bundle-size-"));
    try {
      const file = join(dir, "worker.js");
      writeFileSync(file, randomBytes(1100 * 1024)); // random bytes do not compress
      const res = attempt("scripts/bundle-size.mjs", [file]);
      expect(res.status).toBe(1);
      expect(res.stdout).toMatch(/gzip 1\d{3}\.\d KiB \(OVER the 1024\.0 KiB limit\)\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the builds carry zod's English messages and none of its other locales", () => {
    // tsup.config.ts, zodEnglishOnly: the other locales were 360 KB of every start's largest chunk.
    const maps = readdirSync("dist").filter((f) => f.endsWith(".js.map"));
    expect(maps).toEqual(expect.arrayContaining(["index.js.map", "node.js.map", "worker.js.map"]));
    const locales = new Set<string>();
    for (const map of maps) {
      const { sources } = JSON.parse(readFileSync(join("dist", map), "utf8")) as { sources: string[] };
      for (const source of sources) if (/zod\/v4\/locales\//.test(source)) locales.add(source.replace(/^.*zod\/v4\/locales\//, ""));
    }
    expect([...locales]).toEqual(["en.js"]);
  });

  it("the core bundled for a neutral platform has no Node import", () => {
    expect(run("scripts/check-core-bundle.mjs")).toBe("core bundle (neutral platform): no Node imports\n");
  }, 30_000);

  it("the core check fails on a Node import, ours or a dependency's, naming the importer", () => {
    const res = attempt("scripts/check-core-bundle.mjs", ["test/unit/fixtures/node-imports.mjs"]);
    expect(res.status).toBe(1);
    expect(res.stdout).toBe("");
    expect(res.stderr).toMatch(/^core bundle \(neutral platform\): \d+ Node import\(s\), which workerd and browsers do not have:\n/);
    expect(res.stderr).toContain("  test/unit/fixtures/node-imports.mjs imports node:fs\n");
    expect(res.stderr).toMatch(/ {2}node_modules\/postgres\/\S+ imports (node:)?(net|tls|crypto|stream|os|fs)\n/);
  }, 30_000);
});
