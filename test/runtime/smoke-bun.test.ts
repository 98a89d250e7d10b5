/** The smoke suite (smoke.ts) on the built Bun entry (dist/bun.js) as a process on loopback, memory store. */
import { afterAll } from "vitest";
import { entryStarter, killSpawned } from "../support/service-process.js";
import { describeSmoke } from "./smoke.js";

// A safety net only: each suite stops its service itself (SIGTERM, then the exit code is checked).
afterAll(killSpawned);

describeSmoke("bun, memory", entryStarter("bun"));
