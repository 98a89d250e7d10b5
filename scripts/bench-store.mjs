// Benchmark of the memory store's reads that run per message and per sweep, with many records kept.
//
//   npx tsx scripts/bench-store.mjs [--runs 1000000] [--approvals 10000] [--rounds 5]
//
// Fills the memory store (src/store/memory/store.ts) with --runs finished runs on threads of 100
// runs each, and --approvals decided approvals spread over them, plus one paused run whose
// approval is decided (due) and one pending approval. Then times, as the median of --rounds:
// the approval sweep's two reads (dueApprovals, dueRuns: every 5 s on Node, Bun and Deno), and
// threadBlockers (read before a message on a thread that has one). Neither should grow with the
// records kept elsewhere: the store keeps indexes of paused runs and of approvals by thread, by
// run and pending.
import { createMemoryStore } from "../src/store/memory/store.ts";
import { benchOptions, log, median, runMain, watchdog } from "./lib/bench.mjs";

const opts = benchOptions(process.argv.slice(2), {
  name: "bench-store",
  usage: "usage: npx tsx scripts/bench-store.mjs [--runs 1000000] [--approvals 10000] [--rounds 5]\n",
  numbers: { runs: 1_000_000, approvals: 10_000, rounds: 5 },
});
watchdog("bench-store", 120_000);

const AT = "2026-01-01T00:00:00.000+00:00";
const LATER = "2026-01-02T00:00:00.000+00:00";
const runRecord = (run_id, thread_id, status) => ({
  run_id,
  thread_id,
  status,
  error_type: null,
  error_id: null,
  principal_hash: "p",
  actor: null,
  metadata: {},
  usage: null,
  created_at: AT,
  updated_at: AT,
  ended_at: status === "ok" ? AT : null,
  resumed_by: null,
});
/** The fields the memory store reads of an approval (the rest of a record is carried, not read). */
const approvalRecord = (approval_id, thread_id, run_id) => ({
  approval_id,
  thread_id,
  run_id,
  status: "pending",
  digest: "sha256:00",
  created_at: AT,
  expires_at: LATER,
  internal: { tool_call_id: "call_1", run_trace: null, result: null, executed_at: null, call: { query: [], body: null } },
});
const decision = { status: "approved", decided_by: "p", decided_via: null, decided_at: AT, comment: null, dropCall: true };

async function main() {
  const store = createMemoryStore();
  const t0 = performance.now();
  const threads = Math.max(1, Math.ceil(opts.runs / 100));
  for (let t = 0; t < threads; t++) await store.createThread({ thread_id: `t${t}`, owner: "p", actor: null, created_at: AT, updated_at: AT });
  for (let i = 0; i < opts.runs; i++) await store.createRun(runRecord(`r${i}`, `t${i % threads}`, "ok"));
  for (let i = 0; i < opts.approvals; i++) {
    const run = i % opts.runs;
    await store.createApproval(approvalRecord(`a${i}`, `t${run % threads}`, `r${run}`));
    await store.decideApproval(`a${i}`, decision);
  }
  // What the reads must find: a paused run with a decided approval, and a pending approval.
  await store.createThread({ thread_id: "busy", owner: "p", actor: null, created_at: AT, updated_at: AT });
  await store.createRun(runRecord("paused", "busy", "awaiting_approval"));
  await store.createApproval(approvalRecord("decided", "busy", "paused"));
  await store.decideApproval("decided", decision);
  await store.createApproval(approvalRecord("pending", "busy", "paused"));
  log(`bench-store: node ${process.version}; ${opts.runs} runs on ${threads} threads, ${opts.approvals} decided approvals (filled in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);

  const sweep = [];
  const blockers = [];
  for (let r = 0; r < Math.max(1, opts.rounds); r++) {
    let t = performance.now();
    const expired = await store.dueApprovals(LATER);
    const due = await store.dueRuns(100);
    sweep.push(performance.now() - t);
    if (expired.length !== 1 || due.length !== 1 || due[0].run_id !== "paused") throw new Error("the sweep did not find the paused run and the pending approval");
    t = performance.now();
    const b = await store.threadBlockers("busy");
    blockers.push(performance.now() - t);
    if (b.pending.length !== 1 || b.due?.run_id !== "paused") throw new Error("threadBlockers did not find the pending approval and the due run");
  }
  log(`  approval sweep (dueApprovals + dueRuns): ${median(sweep).toFixed(3)} ms (median of ${sweep.length})`);
  log(`  threadBlockers on a thread:              ${median(blockers).toFixed(3)} ms (median of ${blockers.length})`);
}

runMain("bench-store", main);
