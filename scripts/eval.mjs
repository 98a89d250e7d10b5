#!/usr/bin/env node
/**
 * npm run eval: replays a small dataset of conversations through the agent (in process, through
 * `app.fetch`, no port opened) and asks the judge model (JUDGE_* settings, each defaulting to the
 * agent's) to grade each final answer.
 *
 *   npm run eval -- [--dataset PATH] [--json]
 *
 * The dataset is a JSON array of cases `{ "name", "turns": ["user message", ...], "expectation"?,
 * "judge"? }`; each case runs its turns on one thread of its own. `judge` holds directive lines
 * (`/json {"score": 1, "reason": "..."}`) for the fake judge only. The bundled dataset
 * (scripts/eval-dataset.json) drives the fake model with directives, so its answers are
 * deterministic.
 *
 * The environment is the process environment; MODEL_PROVIDER defaults to `fake` (and MODEL_NAME
 * to `fake` with it), so nothing leaves the machine unless a real provider is configured. The app
 * runs under shared-bearer with a generated API_KEY and writes no logs.
 *
 * Prints a table (or, with --json, one JSON object per case and a last `{"passed", "total"}`
 * line) and `passed N of M`. Exit codes: 0 all passed, 1 a case failed, 2 usage or setting errors.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createApp, createGrader, gradeAnswer } from "../dist/index.js";
import { parseCommandLine } from "./lib/args.mjs";

const USAGE = `Usage: npm run eval -- [--dataset PATH] [--json]

  --dataset PATH   the cases (default scripts/eval-dataset.json)
  --json           one JSON object per case instead of a table
  --help           this text

Exit codes: 0 all cases passed, 1 a case failed, 2 usage error.
`;
const DEFAULT_DATASET = fileURLToPath(new URL("./eval-dataset.json", import.meta.url));
const ANSWER_CHARS = 40;
const REASON_CHARS = 60;

function fail(message) {
  process.stderr.write(`eval: ${message}\n`);
  process.exit(2);
}

function parseOptions(argv) {
  const { values } = parseCommandLine(argv, { name: "eval", usage: USAGE, options: { dataset: { type: "string" }, json: { type: "boolean" } } });
  return { dataset: values.dataset ?? DEFAULT_DATASET, json: values.json === true };
}

function readDataset(path) {
  let cases;
  try {
    cases = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    fail(`cannot read the dataset ${path}: ${error instanceof SyntaxError ? "not valid JSON" : error.code ?? error.message}`);
  }
  if (!Array.isArray(cases) || cases.length === 0) fail(`the dataset ${path} must be a non-empty JSON array of cases`);
  cases.forEach((c, i) => {
    const at = `case ${i + 1}`;
    if (!c || typeof c !== "object" || Array.isArray(c)) fail(`${at} must be an object`);
    if (typeof c.name !== "string" || c.name === "") fail(`${at}: name must be a non-empty string`);
    if (!Array.isArray(c.turns) || c.turns.length === 0 || c.turns.some((t) => typeof t !== "string" || t === ""))
      fail(`${at} (${c.name}): turns must be a non-empty array of non-empty strings`);
    for (const key of ["expectation", "judge"])
      if (c[key] !== undefined && typeof c[key] !== "string") fail(`${at} (${c.name}): ${key} must be a string`);
  });
  return cases;
}

/** The events of one SSE body: `{event, data}` per frame (comments skipped). */
function parseEvents(body) {
  const events = [];
  for (const frame of body.split(/\r?\n\r?\n/)) {
    let event = "message";
    const data = [];
    for (const line of frame.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length === 0) continue;
    try {
      events.push({ event, data: JSON.parse(data.join("\n")) });
    } catch {
      events.push({ event, data: {} });
    }
  }
  return events;
}

/** Sends one turn; the answer is the `message.delta` text, or `error: <code>`. */
async function sendTurn(app, apiKey, threadId, message) {
  const res = await app.fetch(
    new Request("http://eval.localhost/chat", {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ message, thread_id: threadId }),
    }),
  );
  const body = await res.text();
  if (res.status !== 200) {
    let code = `http ${res.status}`;
    try {
      const parsed = JSON.parse(body);
      if (typeof parsed.code === "string") code = parsed.code;
    } catch {
      // not JSON
    }
    return `error: ${code}`;
  }
  let text = "";
  let status;
  for (const { event, data } of parseEvents(body)) {
    if (event === "message.delta" && typeof data.text === "string") text += data.text;
    else if (event === "error") return `error: ${data.code ?? "unknown"}`;
    else if (event === "message.end") status = data.status;
  }
  if (status === undefined) return "error: stream cut";
  return text === "" && status !== "ok" ? `(${status})` : text;
}

const oneLine = (s) => s.replace(/\s+/g, " ").trim();
function truncate(s, n) {
  const cps = Array.from(oneLine(s));
  return cps.length <= n ? cps.join("") : `${cps.slice(0, n - 1).join("")}…`;
}

function printTable(rows) {
  const header = ["case", "turns", "answer", "score", "verdict", "reason"];
  const cells = rows.map((r) => [r.case, String(r.turns), truncate(r.answer, ANSWER_CHARS), r.score.toFixed(2), r.verdict, truncate(r.reason, REASON_CHARS)]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => Array.from(c[i]).length)));
  const line = (c) => c.map((v, i) => (i === c.length - 1 ? v : v + " ".repeat(widths[i] - Array.from(v).length))).join("  ").trimEnd();
  const out = [line(header), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)];
  process.stdout.write(`${out.join("\n")}\n`);
}

async function main() {
  const options = parseOptions(process.argv.slice(2));
  const cases = readDataset(options.dataset);

  const apiKey = randomBytes(24).toString("base64url");
  const env = { ...process.env };
  if (!env.MODEL_PROVIDER) env.MODEL_PROVIDER = "fake";
  if (env.MODEL_PROVIDER === "fake" && !env.MODEL_NAME) env.MODEL_NAME = "fake";
  env.AUTH_POLICY = "shared-bearer";
  env.API_KEY = apiKey;

  let app;
  let grader;
  try {
    app = await createApp({ env, logWrite: () => {} });
    grader = createGrader(app.settings, (input, init) => fetch(input, init));
  } catch (error) {
    if (app) await app.close();
    fail(error instanceof Error ? error.message : String(error));
  }

  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  const rows = [];
  const runId = randomBytes(4).toString("hex");
  try {
    for (const [i, c] of cases.entries()) {
      const threadId = `eval-${runId}-${i + 1}`;
      const transcript = [];
      let answer = "";
      for (const [t, turn] of c.turns.entries()) {
        answer = await sendTurn(app, apiKey, threadId, turn);
        transcript.push(`User: ${turn}`);
        if (t < c.turns.length - 1) transcript.push(`Assistant: ${answer}`);
      }
      let grade;
      try {
        grade = await gradeAnswer(grader, { question: transcript.join("\n"), answer, expectation: c.expectation, fakeDirective: c.judge }, controller.signal);
      } catch (error) {
        grade = { score: 0, verdict: "fail", reason: `the judge failed: ${error instanceof Error ? error.message : String(error)}` };
      }
      const row = { case: c.name, turns: c.turns.length, answer, ...grade };
      rows.push(row);
      if (options.json) process.stdout.write(`${JSON.stringify(row)}\n`);
      if (controller.signal.aborted) break;
    }
  } finally {
    await app.close();
  }

  const passed = rows.filter((r) => r.verdict === "pass").length;
  if (options.json) process.stdout.write(`${JSON.stringify({ passed, total: cases.length })}\n`);
  else {
    printTable(rows);
    process.stdout.write(`passed ${passed} of ${cases.length}\n`);
  }
  process.exitCode = passed === cases.length ? 0 : 1;
}

await main();
