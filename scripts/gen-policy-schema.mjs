// npm run schemas: writes schemas/api-policy.schema.json from the zod schema of the policy document
// (src/policy/schema.ts, through src/tooling/policy-json-schema.ts). Run with tsx, which loads src/
// directly. `--check` writes nothing and exits 1 when the file is stale.
//
//   npx tsx scripts/gen-policy-schema.mjs [--check]
import { readFileSync, writeFileSync } from "node:fs";
import { policyJsonSchemaText } from "../src/tooling/policy-json-schema.ts";
import { parseCommandLine } from "./lib/args.mjs";

const USAGE = `Usage: npm run schemas [-- --check]

  --check   write nothing; exit 1 when schemas/api-policy.schema.json is not what the zod schema gives
  --help    this text
`;
const FILE = new URL("../schemas/api-policy.schema.json", import.meta.url);

const { values } = parseCommandLine(process.argv.slice(2), { name: "schemas", usage: USAGE, options: { check: { type: "boolean" } } });
const text = policyJsonSchemaText();
let current;
try {
  current = readFileSync(FILE, "utf8");
} catch {
  current = undefined;
}
if (current === text) process.stdout.write("schemas: schemas/api-policy.schema.json is up to date\n");
else if (values.check) {
  process.stderr.write("schemas: schemas/api-policy.schema.json is stale; run npm run schemas\n");
  process.exitCode = 1;
} else {
  writeFileSync(FILE, text);
  process.stdout.write("schemas: wrote schemas/api-policy.schema.json\n");
}
