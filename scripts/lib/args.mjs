// Command-line options for every script under scripts/: node:util parseArgs in strict mode, with the
// same answer to bad usage everywhere (the message and the usage text on stderr, exit code 2) and
// `--help` / `-h` printing the usage text on stdout (exit code 0).
import { parseArgs } from "node:util";

/** Writes `<name>: <message>`, a blank line and `usage` to stderr, then exits 2. */
export function usageError(name, usage, message) {
  process.stderr.write(`${name}: ${message}\n\n${usage}`);
  process.exit(2);
}

/**
 * Parses `argv` against `options` (parseArgs option configs; `help` / `-h` is added). A string
 * option may be given once and never empty; a leading `--` is dropped (package.json passes one so
 * that node itself never reads a script's `--env-file`, nodejs/node#54232). Returns
 * `{ values, positionals }`; positionals only when `positionals` is true.
 */
export function parseCommandLine(argv, { name, usage, options = {}, positionals = false }) {
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  let parsed;
  try {
    parsed = parseArgs({ args, options: { ...options, help: { type: "boolean", short: "h" } }, strict: true, allowPositionals: positionals, tokens: true });
  } catch (error) {
    // Only parseArgs' own usage errors (ERR_PARSE_ARGS_*) are the caller's fault.
    if (typeof error?.code === "string" && error.code.startsWith("ERR_PARSE_ARGS_")) usageError(name, usage, error.message.replace(/\n/g, " "));
    throw error;
  }
  if (parsed.values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const seen = new Set();
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || options[token.name]?.type !== "string") continue;
    if (seen.has(token.name)) usageError(name, usage, `${token.rawName} is given twice`);
    seen.add(token.name);
    if (token.value === "") usageError(name, usage, `${token.rawName} needs a value`);
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

/**
 * The value of a number option: finite and >= 0, else a usage error. `undefined` gives `fallback`.
 */
export function numberOption(value, flag, fallback, { name, usage }) {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) usageError(name, usage, `--${flag} needs a number >= 0 (got ${JSON.stringify(value)})`);
  return n;
}
