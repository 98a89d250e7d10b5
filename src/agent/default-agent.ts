/** The small default agent: a system prompt and two tools that need no network. */
import { calculator } from "./tools/calculator.js";
import { currentTime } from "./tools/current-time.js";
import type { Tool } from "./tools/define.js";

export const DEFAULT_SYSTEM_PROMPT = [
  "You are a helpful assistant behind an HTTP API.",
  "Use the calculator for arithmetic and current_time for dates and times; do not guess either.",
  "Answer briefly. If a tool fails, say so plainly and do not invent its result.",
].join("\n");

export const DEFAULT_TOOLS: readonly Tool[] = [calculator, currentTime];
