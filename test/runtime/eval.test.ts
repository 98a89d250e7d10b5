/**
 * scripts/eval.mjs (`npm run eval`) as a child process on the built package with the fake model:
 * the bundled dataset passes, a case the judge scores 0 fails with exit 1, usage errors exit 2.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const exec = promisify(execFile);
const SCRIPT = resolve("scripts/eval.mjs");
const DATASET = resolve("scripts/eval-dataset.json");
const FAKE = { MODEL_PROVIDER: "fake", MODEL_NAME: "fake" };

/** A working directory of its own, so no stray response_schema.json or api-policy.yaml is read. */
const tempDir = () => mkdtempSync(join(tmpdir(), "eval-"));

async function run(args: string[], env: Record<string, string> = FAKE) {
  try {
    const r = await exec(process.execPath, [SCRIPT, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, cwd: tempDir() });
    return { code: 0, stdout: r.stdout, stderr: r.stderr, out: r.stdout + r.stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr, out: e.stdout + e.stderr };
  }
}

interface Case {
  name: string;
  turns: string[];
  expectation?: string;
  judge?: string;
}

const bundled = JSON.parse(readFileSync(DATASET, "utf8")) as Case[];

describe("npm run eval", () => {
  it("passes every case of the bundled dataset with the fake model", async () => {
    const res = await run([]);
    expect(res.code, res.out).toBe(0);
    expect(res.stderr).toBe("");
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^case\s+turns\s+answer\s+score\s+verdict\s+reason$/);
    expect(bundled).toHaveLength(5);
    for (const c of bundled) {
      const row = lines.find((l) => l.startsWith(`${c.name} `));
      expect(row, c.name).toBeDefined();
      expect(row).toMatch(/\spass\s/);
    }
    expect(lines.at(-1)).toBe("passed 5 of 5");
    expect(res.stdout).toContain("42");
  });

  it("fails (exit 1) when the judge scores a case 0", async () => {
    const dir = tempDir();
    const dataset = join(dir, "dataset.json");
    const cases = bundled.map((c, i) => (i === 1 ? { ...c, judge: '/json {"score": 0, "reason": "wrong answer"}' } : c));
    writeFileSync(dataset, JSON.stringify(cases));
    const res = await run(["--dataset", dataset]);
    expect(res.code, res.out).toBe(1);
    const row = res.stdout.split("\n").find((l) => l.startsWith(`${bundled[1]!.name} `));
    expect(row).toMatch(/\sfail\s+wrong answer$/);
    expect(res.stdout).toContain("passed 4 of 5");
  });

  it("a case without a judge line fails with the fake judge: its echo is not JSON", async () => {
    const dir = tempDir();
    const dataset = join(dir, "dataset.json");
    writeFileSync(dataset, JSON.stringify([{ name: "no judge", turns: ["hello"] }]));
    const res = await run(["--dataset", dataset, "--json"]);
    expect(res.code, res.out).toBe(1);
    const [row, summary] = res.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(row).toEqual({ case: "no judge", turns: 1, answer: "echo: hello", score: 0, verdict: "fail", reason: "the judge did not answer JSON" });
    expect(summary).toEqual({ passed: 0, total: 1 });
  });

  it("an error event is the answer `error: <code>`", async () => {
    const dir = tempDir();
    const dataset = join(dir, "dataset.json");
    writeFileSync(dataset, JSON.stringify([{ name: "model error", turns: ["/error"], judge: '/json {"score": 0, "reason": "failed"}' }]));
    const res = await run(["--dataset", dataset, "--json"]);
    expect(res.code, res.out).toBe(1);
    expect(JSON.parse(res.stdout.split("\n")[0]!).answer).toBe("error: run_failed");
  });

  it("exits 2 on usage errors and a bad dataset", async () => {
    expect((await run(["--bogus"])).code).toBe(2);
    expect((await run(["--dataset"])).code).toBe(2);
    const dir = tempDir();
    const dataset = join(dir, "dataset.json");
    writeFileSync(dataset, JSON.stringify([{ name: "x", turns: [] }]));
    const res = await run(["--dataset", dataset]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("turns");
  });
});
