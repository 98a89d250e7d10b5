// Preloaded (`--require`) into a Node entry by test/runtime/memory-reducer.test.ts: counts the
// memory reducer's nudges (the `node:vm` scripts src/runtime/memory-reducer.ts compiles) and
// prints the count when the process exits. Wraps `vm.Script` and passes it on to ES modules'
// `import { Script } from "node:vm"` with `syncBuiltinESMExports()`.
"use strict";
const vm = require("node:vm");
const { syncBuiltinESMExports } = require("node:module");

let nudges = 0;
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    if (options && options.filename === "memory-reducer-nudge") nudges++;
  }
};
syncBuiltinESMExports();
process.on("exit", () => process.stderr.write(`memory reducer nudges: ${nudges}\n`));
