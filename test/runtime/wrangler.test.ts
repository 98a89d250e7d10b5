/**
 * wrangler.toml against the built worker: `wrangler deploy --dry-run` bundles nothing (no_bundle),
 * logs in nowhere and passes; the Durable Object classes it binds are exports of dist/worker.js,
 * created by a SQLite migration; the cron trigger is there; the compatibility date and flags are
 * the ones the tests run workerd with. `npm test` builds dist first.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS, DURABLE_OBJECTS } from "../support/workerd.js";

const toml = readFileSync("wrangler.toml", "utf8");

it("wrangler deploy --dry-run passes and lists the Durable Object bindings", async () => {
  const outdir = mkdtempSync(join(tmpdir(), "wrangler-"));
  const { stdout } = await promisify(execFile)(process.execPath, ["node_modules/wrangler/bin/wrangler.js", "deploy", "--dry-run", "--outdir", outdir], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: outdir, WRANGLER_SEND_METRICS: "false", CI: "1" },
    timeout: 60_000,
  });
  expect(stdout).toContain("--dry-run: exiting now.");
  for (const [binding, { className }] of Object.entries(DURABLE_OBJECTS)) expect(stdout).toMatch(new RegExp(`env\\.${binding} \\(${className}\\)\\s+Durable Object`));
  expect(readFileSync(join(outdir, "worker.js"), "utf8")).toMatch(/export\s*\{[^}]*AgentStoreObject[^}]*\}/);
}, 90_000);

it("binds the classes dist/worker.js exports, made by a new_sqlite_classes migration, with a cron trigger and the tests' compatibility date and flags", () => {
  // dist/worker.js imports cloudflare:workers, which Node cannot load: its last statement lists the exports.
  const exported = /export\s*\{([^}]*)\}\s*;?\s*(\/\/.*)?\s*$/.exec(readFileSync("dist/worker.js", "utf8"))?.[1] ?? "";
  for (const { className } of Object.values(DURABLE_OBJECTS)) {
    expect(exported).toMatch(new RegExp(`\\b${className}\\b`));
    expect(toml).toMatch(new RegExp(`class_name = "${className}"`));
    expect(toml).toMatch(new RegExp(`new_sqlite_classes = \\[[^\\]]*"${className}"`));
  }
  expect(toml).toMatch(/^\[triggers\]\ncrons = \["\* \* \* \* \*"\]/m);
  expect(toml).toContain(`compatibility_date = "${COMPATIBILITY_DATE}"`);
  expect(toml).toContain(`compatibility_flags = ${JSON.stringify(COMPATIBILITY_FLAGS)}`);
});
