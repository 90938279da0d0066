// The example app's workflows. Each step records that it ran (a line in STEP_LOG, when set: tag,
// step, time, process) so that the tests can count how often every step really ran.
import { appendFileSync } from "node:fs";
import { getStepMetadata, sleep } from "workflow";

function record(tag, step) {
  const log = process.env.STEP_LOG;
  // The process too: the app may run as several (WORKFLOW_APP_PROCESSES).
  if (log) appendFileSync(log, `${tag} ${step} ${Date.now()} ${process.pid}\n`);
}

async function add(tag, step, value, by) {
  "use step";
  record(tag, step);
  return value + by;
}

async function flakyStep(tag, value) {
  "use step";
  record(tag, "flaky");
  if (getStepMetadata().attempt === 1) throw new Error("the first attempt fails");
  return value * 2;
}

async function slowStep(tag, ms) {
  "use step";
  record(tag, "slow");
  await new Promise((r) => setTimeout(r, ms));
  return ms;
}

async function measure(tag, text) {
  "use step";
  record(tag, "measure");
  return text.length;
}

async function now(tag, step) {
  "use step";
  record(tag, step);
  return Date.now();
}

/** Steps in sequence: each gets the previous one's result. */
export async function sequence(tag, steps) {
  "use workflow";
  let value = 0;
  for (let i = 0; i < steps; i++) value = await add(tag, `add${i}`, value, i + 1);
  return value;
}

/** A step that throws on its first attempt and is retried. */
export async function retried(tag) {
  "use workflow";
  const a = await add(tag, "before", 0, 1);
  const b = await flakyStep(tag, a);
  return await add(tag, "after", b, 1);
}

/** sleep() between two steps: returns when each ran. */
export async function sleeper(tag, seconds) {
  "use workflow";
  const before = await now(tag, "before");
  await sleep(`${seconds}s`);
  const after = await now(tag, "after");
  return { before, after };
}

/** One step that takes `ms`. */
export async function slow(tag, ms) {
  "use workflow";
  return await slowStep(tag, ms);
}

/** A run whose input is large: returns its length. */
export async function large(tag, text) {
  "use workflow";
  return await measure(tag, text);
}
