/**
 * The build's two bundle checks, in `npm test` too (CI runs the test command, not the build):
 * the minified worker bundle gzips under 1 MiB (scripts/bundle-size.mjs, on dist/worker.js that
 * `npm test` builds first), and the core bundled for a neutral platform imports nothing from Node
 * (scripts/check-core-bundle.mjs).
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const run = (script: string) => execFileSync(process.execPath, [script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

describe("bundles", () => {
  it("the worker bundle is minified and gzips under 1 MiB", () => {
    const line = run("scripts/bundle-size.mjs");
    expect(line).toMatch(/^dist\/worker\.js: [\d.]+ KiB, gzip [\d.]+ KiB \(under the 1024\.0 KiB limit\)\n$/);
    // minified: far below the 3 MB it was unminified
    expect(Number(/: ([\d.]+) KiB,/.exec(line)![1])).toBeLessThan(2048);
  });

  it("the core bundled for a neutral platform has no Node import", () => {
    expect(run("scripts/check-core-bundle.mjs")).toBe("core bundle (neutral platform): no Node imports\n");
  }, 30_000);
});
