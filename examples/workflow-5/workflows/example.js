// The 5.x example app's workflows. Each step records that it ran (a line in STEP_LOG, when set:
// tag, step, time, process) so that the tests can count how often every step really ran.
//
// Nothing here is imported from `workflow`: in 5.x that import puts the package's workflow-side
// runtime (with zod) into the bundle that every replay evaluates in a fresh context, and the app
// then spends about 150 ms of CPU on a one-step run on the test machine against about 25 ms
// without (docs/performance.md); a test of thousands of runs would be paced by it. An app that
// needs sleep() or hooks imports them and pays that.
import { appendFileSync, writeFileSync } from "node:fs";

function record(tag, step) {
  const log = process.env.STEP_LOG;
  if (log) appendFileSync(log, `${tag} ${step} ${Date.now()} ${process.pid}\n`);
}

async function add(tag, step, value, by) {
  "use step";
  record(tag, step);
  return value + by;
}

/** One step: the smallest run there is. */
export async function single(tag, value) {
  "use workflow";
  return await add(tag, "add", value, 1);
}

/** Fails its first attempt (remembered in a file next to STEP_LOG), then doubles `value`. */
async function flakyStep(tag, value) {
  "use step";
  record(tag, "flaky");
  const log = process.env.STEP_LOG;
  try {
    if (log) writeFileSync(`${log}.${tag}.failed`, "", { flag: "wx" });
  } catch {
    return value * 2; // failed once already
  }
  if (log) throw new Error("the first attempt fails");
  return value * 2;
}

/** A step that throws once and is retried: core queues the retry as a delayed message. */
export async function retried(tag) {
  "use workflow";
  const a = await add(tag, "before", 0, 1);
  const b = await flakyStep(tag, a);
  return await add(tag, "after", b, 1);
}
