#!/usr/bin/env node
/**
 * After `npm test` in .ci/run: the smoke suite (test/runtime/smoke.ts) as one column per runtime
 * and store, read from vitest's JSON report, then the whole run's totals as one closing line.
 *
 *   node .ci/runtimes.mjs <vitest-report.json>
 *
 * A column is a `describeSmoke(name, ...)` suite (its describe is `smoke: <name>`); the runtimes
 * CI must show are listed in EXPECTED, and one missing from the report fails like a red cell. A
 * test skipped because its file failed (a service that never started) counts as failed. Exits 1
 * when any cell is not green.
 */
import { readFileSync } from "node:fs";

const EXPECTED = [
  "node, memory",
  "node, postgres",
  "bun, memory",
  "bun, postgres",
  "bun binary, memory",
  "deno, memory",
  "deno, postgres",
  "workerd, durable objects",
  "workerd, postgres",
];
const PREFIX = "smoke: ";

const path = process.argv[2];
if (!path) {
  console.error("usage: node .ci/runtimes.mjs <vitest-report.json>");
  process.exit(2);
}
let report;
try {
  report = JSON.parse(readFileSync(path, "utf8"));
} catch (error) {
  console.error(`runtimes: cannot read the vitest report ${path}: ${error.message}`);
  process.exit(1);
}

/** column -> test title -> pass | FAIL | skip */
const columns = new Map(EXPECTED.map((name) => [name, new Map()]));
const titles = [];
for (const file of report.testResults ?? []) {
  for (const test of file.assertionResults ?? []) {
    const suite = (test.ancestorTitles ?? []).find((t) => t.startsWith(PREFIX));
    if (!suite) continue;
    const column = suite.slice(PREFIX.length);
    if (!columns.has(column)) columns.set(column, new Map());
    if (!titles.includes(test.title)) titles.push(test.title);
    const cell = test.status === "passed" ? "pass" : test.status === "failed" || file.status === "failed" ? "FAIL" : "skip";
    columns.get(column).set(test.title, cell);
  }
}

const names = [...columns.keys()];
const rows = titles.map((title) => [title, ...names.map((n) => columns.get(n).get(title) ?? "MISSING")]);
rows.push(["all", ...names.map((n) => (columns.get(n).size === 0 ? "MISSING" : [...columns.get(n).values()].every((c) => c === "pass") && columns.get(n).size === titles.length ? "green" : "RED"))]);
const header = ["smoke suite", ...names];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
console.log("");
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const r of rows) console.log(line(r));
console.log("");

const passed = report.numPassedTests ?? 0;
const failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(rows.at(-1).slice(1).every((c) => c === "green") ? 0 : 1);
