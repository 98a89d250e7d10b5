// npm run schemas: writes schemas/api-policy.schema.json from the zod schema of the policy document
// (src/policy/schema.ts, through src/tooling/policy-json-schema.ts) and schemas/system.schema.json
// from the zod schema of the system file (src/tooling/system/schema.ts). Run with tsx, which loads
// src/ directly. `--check` writes nothing and exits 1 when a file is stale.
//
//   npx tsx scripts/gen-policy-schema.mjs [--check]
import { readFileSync, writeFileSync } from "node:fs";
import { policyJsonSchemaText } from "../src/tooling/policy-json-schema.ts";
import { systemJsonSchemaText } from "../src/tooling/system-json-schema.ts";
import { parseCommandLine } from "./lib/args.mjs";

const USAGE = `Usage: npm run schemas [-- --check]

  --check   write nothing; exit 1 when schemas/api-policy.schema.json or schemas/system.schema.json
            is not what its zod schema gives
  --help    this text
`;
const FILES = [
  { name: "schemas/api-policy.schema.json", text: policyJsonSchemaText },
  { name: "schemas/system.schema.json", text: systemJsonSchemaText },
];

const { values } = parseCommandLine(process.argv.slice(2), { name: "schemas", usage: USAGE, options: { check: { type: "boolean" } } });
for (const file of FILES) {
  const url = new URL(`../${file.name}`, import.meta.url);
  const text = file.text();
  let current;
  try {
    current = readFileSync(url, "utf8");
  } catch {
    current = undefined;
  }
  if (current === text) process.stdout.write(`schemas: ${file.name} is up to date\n`);
  else if (values.check) {
    process.stderr.write(`schemas: ${file.name} is stale; run npm run schemas\n`);
    process.exitCode = 1;
  } else {
    writeFileSync(url, text);
    process.stdout.write(`schemas: wrote ${file.name}\n`);
  }
}
