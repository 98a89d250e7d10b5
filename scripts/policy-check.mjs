#!/usr/bin/env node
/**
 * npm run policy:check: checks the outbound API policy document, the environment each API
 * needs (base URL, bearer token), the APIs' OpenAPI files and the tools' declared calls, the
 * same way the service does at startup, without starting it. With TOOLS_FROM_OPENAPI=true in
 * the environment, or --openapi-tools, it also makes the tools the service would make from the
 * APIs' OpenAPI files, checks them (name clashes, declared calls) and lists them.
 *
 *   npm run policy:check -- [--policy PATH] [--env-file PATH] [--tools MODULE] [--openapi-tools]
 *
 * The environment is the process environment above an env file (`--env-file PATH`, else
 * $ENV_FILE, else `.env` in the working directory when it exists); a process variable wins.
 * Prints each problem as `place: message` and each warning as `warning: ...`; when clean, one
 * line per tool made from OpenAPI (`tool NAME: METHOD PATH (operationId)`, `, waits for approval`
 * when the policy gates it), then `ok: N APIs checked`. Exit codes: 0 clean, 3 policy problems, 2 usage error (bad arguments,
 * an unreadable env file or tools module, invalid settings).
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { checkPolicy } from "../dist/index.js";
import { parseCommandLine, usageError as usageErrorOf } from "./lib/args.mjs";

const USAGE = `Usage: npm run policy:check -- [--policy PATH] [--env-file PATH] [--tools MODULE] [--openapi-tools]

  --policy PATH     the policy document (sets API_POLICY_PATH; default $API_POLICY_PATH or api-policy.yaml)
  --env-file PATH   an env file read below the process environment (default $ENV_FILE or .env if present)
  --tools MODULE    an ES module whose default export (or \`tools\` export) is the array of tools
                    (from defineTool) whose declared calls are checked; default: the built-in tools
  --openapi-tools   make, check and list the tools from the APIs' OpenAPI files, as the service does
                    with TOOLS_FROM_OPENAPI=true (that setting in the environment does the same)
  --help            this text

Exit codes: 0 clean, 3 policy problems, 2 usage error.
`;

const usageError = (message) => usageErrorOf("policy:check", USAGE, message);

function parseOptions(argv) {
  const { values } = parseCommandLine(argv, {
    name: "policy:check",
    usage: USAGE,
    options: { policy: { type: "string" }, "env-file": { type: "string" }, tools: { type: "string" }, "openapi-tools": { type: "boolean" } },
  });
  return { policy: values.policy, envFile: values["env-file"], tools: values.tools, openapiTools: values["openapi-tools"] === true };
}

/** KEY=value lines, `#` comments, optional `export `, single or double quotes (as the service reads .env). */
function parseEnvFile(text, path) {
  const out = {};
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) usageError(`${path} line ${i + 1} is not KEY=value`);
    let value = match[2];
    const quoted = /^(["'])((?:\\.|(?!\1).)*)\1\s*(?:#.*)?$/.exec(value);
    if (quoted) {
      value = quoted[2];
      if (quoted[1] === '"') value = value.replace(/\\([n"\\])/g, (_, c) => (c === "n" ? "\n" : c));
    } else {
      value = value.replace(/\s+#.*$/, "").trim();
    }
    out[match[1]] = value;
  }
  return out;
}

function readEnv(options) {
  const explicit = options.envFile !== undefined;
  const path = options.envFile ?? process.env.ENV_FILE ?? ".env";
  let fileEnv = {};
  if (explicit || existsSync(resolve(path))) {
    let text;
    try {
      text = readFileSync(resolve(path), "utf8");
    } catch (error) {
      usageError(`cannot read env file ${path}: ${error.message}`);
    }
    fileEnv = parseEnvFile(text, path);
  }
  const env = { ...fileEnv };
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  if (options.policy !== undefined) env.API_POLICY_PATH = options.policy;
  return env;
}

async function loadTools(specifier) {
  let mod;
  try {
    mod = await import(pathToFileURL(resolve(specifier)).href);
  } catch (error) {
    usageError(`cannot load tools module ${specifier}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const tools = Array.isArray(mod.default) ? mod.default : mod.tools;
  if (!Array.isArray(tools)) usageError(`tools module ${specifier} must export an array of tools as default or as \`tools\``);
  tools.forEach((tool, i) => {
    if (!tool || typeof tool.name !== "string" || !Array.isArray(tool.calls))
      usageError(`tools module ${specifier}: entry ${i} is not a tool from defineTool (needs name and calls)`);
  });
  return tools;
}

async function main() {
  // package.json runs `node scripts/policy-check.mjs -- ...`: on Node 20 a script argument
  // --env-file naming a missing file is otherwise taken by node itself (nodejs/node#54232).
  // parseCommandLine drops that leading `--`.
  const options = parseOptions(process.argv.slice(2));
  const env = readEnv(options);
  const tools = options.tools === undefined ? undefined : await loadTools(options.tools);

  let result;
  try {
    result = await checkPolicy({ env, root: process.cwd(), ...(tools ? { tools } : {}), ...(options.openapiTools ? { openapiTools: true } : {}) });
  } catch (error) {
    if (error && error.code === "invalid_settings" && Array.isArray(error.problems)) {
      process.stderr.write("policy:check: invalid settings\n");
      for (const p of error.problems) process.stderr.write(`${p.variable}: ${p.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  for (const w of result.warnings) process.stderr.write(`warning: ${w}\n`);
  if (result.problems.length > 0) {
    for (const p of result.problems) process.stderr.write(`${p.place}: ${p.message}\n`);
    process.stderr.write(`policy:check: ${result.problems.length} problem${result.problems.length === 1 ? "" : "s"}\n`);
    process.exit(3);
  }
  for (const t of result.tools ?? [])
    process.stdout.write(`tool ${t.name}: ${t.method} ${t.path}${t.operationId !== undefined ? ` (${t.operationId})` : ""}${t.gated ? ", waits for approval" : ""}\n`);
  const n = result.apis.length;
  const note = n === 0 ? ` (no policy file at ${env.API_POLICY_PATH ?? "api-policy.yaml"}: every outbound call is refused)` : "";
  process.stdout.write(`ok: ${n} APIs checked${note}\n`);
}

await main();
