/**
 * The worker of the smoke suite's workerd column: the default worker made with the example tools
 * (workerd loads no TOOLS_MODULE: a deployment with tools of its own bundles them into an entry
 * like this one, which test/support/workerd.ts bundles as tsup bundles dist/worker.js).
 */
// @ts-expect-error -- an example module in plain JavaScript, without types
import tools from "../../examples/tools/tickets.mjs";
import { createWorker } from "../../src/runtime/worker.js";

export { AgentStoreObject, ThreadLeaseObject } from "../../src/runtime/worker.js";

export default createWorker({ tools });
