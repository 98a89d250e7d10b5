// Benchmark of the memory store's reads that run per message and per sweep, with many records kept.
//
//   npx tsx scripts/bench-store.mjs [--runs 1000000] [--approvals 10000] [--tasks 200000] [--threads 250000] [--rounds 5]
//
// Fills the memory store (src/store/memory/store.ts) with --runs finished runs on threads of 100
// runs each, and --approvals decided approvals spread over them, plus one paused run whose
// approval is decided (due) and one pending approval. Then times, as the median of --rounds:
// the approval sweep's two reads (dueApprovals, dueRuns: every 5 s on Node, Bun and Deno), and
// threadBlockers (read before a message on a thread that has one). Then --tasks finished A2A
// tasks on those threads, and on one thread of its own a task waiting on a decided approval
// (stranded) and one waiting on a pending one: the settling sweep's read (strandedTasks, every
// 30 s), what a decision reads (tasksWaitingOn) and a page of a thread's tasks (listTasks). None
// should grow with the records kept elsewhere: the store keeps indexes of paused runs, of
// approvals by thread, by run and pending, and of tasks by thread and not finished.
import { createMemoryStore } from "../src/store/memory/store.ts";
import { benchOptions, log, median, runMain, watchdog } from "./lib/bench.mjs";

const opts = benchOptions(process.argv.slice(2), {
  name: "bench-store",
  usage: "usage: npx tsx scripts/bench-store.mjs [--runs 1000000] [--approvals 10000] [--tasks 200000] [--threads 250000] [--rounds 5]\n",
  numbers: { runs: 1_000_000, approvals: 10_000, tasks: 200_000, threads: 250_000, rounds: 5 },
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
/** An A2A task of the caller "p" on `thread`. */
const taskRecord = (task_id, context_id, state, approval_ids) => ({
  task_id,
  context_id,
  owner: "p",
  actor: null,
  state,
  status_parts: [],
  artifacts: [],
  approval_ids,
  run_id: null,
  instance_id: null,
  created_at: AT,
  updated_at: AT,
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
  for (let i = 0; i < opts.tasks; i++) await store.createTask(taskRecord(`k${i}`, `t${i % threads}`, "completed", []));
  await store.createTask(taskRecord("stranded", "busy", "input-required", ["decided"]));
  await store.createTask(taskRecord("waiting", "busy", "input-required", ["pending"]));
  log(
    `bench-store: node ${process.version}; ${opts.runs} runs on ${threads} threads, ${opts.approvals} decided approvals, ${opts.tasks} finished tasks ` +
      `(filled in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );

  const sweep = [];
  const blockers = [];
  const stranded = [];
  const waiting = [];
  const page = [];
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
    t = performance.now();
    const s = await store.strandedTasks(LATER, 100);
    stranded.push(performance.now() - t);
    if (s.length !== 1 || s[0].task_id !== "stranded") throw new Error("strandedTasks did not find the stranded task alone");
    t = performance.now();
    const w = await store.tasksWaitingOn("busy", "pending");
    waiting.push(performance.now() - t);
    if (w.length !== 1 || w[0].task_id !== "waiting") throw new Error("tasksWaitingOn did not find the waiting task alone");
    t = performance.now();
    const l = await store.listTasks({ owner: "p", context_id: "busy", limit: 20, offset: 0 });
    page.push(performance.now() - t);
    if (l.length !== 2) throw new Error("listTasks did not find the thread's two tasks");
  }
  log(`  approval sweep (dueApprovals + dueRuns): ${median(sweep).toFixed(3)} ms (median of ${sweep.length})`);
  log(`  threadBlockers on a thread:              ${median(blockers).toFixed(3)} ms (median of ${blockers.length})`);
  log(`  A2A settling sweep (strandedTasks):      ${median(stranded).toFixed(3)} ms (median of ${stranded.length})`);
  log(`  a decision's tasks (tasksWaitingOn):     ${median(waiting).toFixed(3)} ms (median of ${waiting.length})`);
  log(`  a thread's tasks (listTasks, a page):    ${median(page).toFixed(3)} ms (median of ${page.length})`);

  // Threads written a second apart after AT, the newest last.
  const at = (i) => new Date(Date.parse(AT) + (i + 1) * 1000).toISOString();
  for (let i = 0; i < opts.threads; i++) await store.createThread({ thread_id: `x${i}`, owner: "p", actor: null, created_at: at(i), updated_at: at(i) });
  const kept = threads + 1 + opts.threads;
  const listed = [];
  const idle = [];
  const ownerTasks = [];
  const approvalPage = [];
  for (let r = 0; r < Math.max(1, opts.rounds); r++) {
    let t = performance.now();
    const l = await store.listThreads({ owner: "p", limit: 20, offset: 0 });
    listed.push(performance.now() - t);
    if (opts.threads >= 20 && (l.length !== 20 || l[0].thread_id !== `x${opts.threads - 1}`)) throw new Error("listThreads did not put the newest thread first");
    t = performance.now();
    const i = await store.idleThreads(LATER, 100);
    idle.push(performance.now() - t);
    if (i.length !== Math.min(100, kept)) throw new Error("idleThreads did not find 100 idle threads");
    t = performance.now();
    const o = await store.listTasks({ owner: "p", limit: 20, offset: 0 });
    ownerTasks.push(performance.now() - t);
    if (o.length !== Math.min(20, opts.tasks + 2)) throw new Error("listTasks did not find a page of the caller's tasks");
    t = performance.now();
    const a = await store.listApprovals({ status: "approved", limit: 20, offset: 0 });
    approvalPage.push(performance.now() - t);
    if (a.length !== Math.min(20, opts.approvals + 1)) throw new Error("listApprovals did not find a page of decided approvals");
  }
  log(`with ${kept} threads and ${opts.tasks + 2} tasks kept, reads that go through them all:`);
  log(`  a page of threads (listThreads, 20):     ${median(listed).toFixed(3)} ms (median of ${listed.length})`);
  log(`  retention sweep (idleThreads, 100):      ${median(idle).toFixed(3)} ms (median of ${idle.length})`);
  log(`  a caller's tasks (listTasks, a page):    ${median(ownerTasks).toFixed(3)} ms (median of ${ownerTasks.length})`);
  log(`  decided approvals (listApprovals, a page): ${median(approvalPage).toFixed(3)} ms (median of ${approvalPage.length}; ${opts.approvals + 2} approvals kept)`);
}

runMain("bench-store", main);
