// `npm run bench:checks`: CPU per request of the gateway's input checks (src/http/validation.ts)
// with TypeBox's interpreting `Value.Check` against validators compiled once per schema
// (`typebox/compile`, what the gateway uses), on the API's own definitions with the values a
// benchmark request carries: publish (topic; its headers absent), receive 10 (topic, group, two
// headers), acknowledge (topic, group). Both ways run in the same process, alternating in rounds,
// so the ratio compiled ÷ interpreted is what carries over; the µs are this machine's.
import { parseArgs } from "node:util";
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { Value } from "typebox/value";
import { LEASE_HEADERS, LEASE_PATH, RECEIVE_HEADERS } from "../src/api/messages.js";
import { GROUP_PATH, INPUT_ERROR, TOPIC_PATH } from "../src/api/schema.js";
import { loadAverage } from "./lib/proc.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    iterations: { type: "string", default: "100000" },
  },
});
const ROUNDS = Math.max(1, Number(values.rounds));
const N = Math.max(1000, Number(values.iterations));

type Check = (v: unknown) => boolean;
interface Checked {
  readonly schema: TSchema;
  readonly compiled: Check;
  readonly value: unknown;
}

/** The checked (annotated) properties of `object` given in `input`, as the gateway checks them. */
function checkedValues(object: TSchema, input: Record<string, unknown>): Checked[] {
  const props = (object as { properties?: Record<string, TSchema> }).properties ?? {};
  return Object.entries(props)
    .filter(([name, s]) => (s as Record<string, unknown>)[INPUT_ERROR] && name in input)
    .map(([name, schema]) => {
      const validator = Compile(schema);
      return { schema, compiled: (v: unknown) => validator.Check(v), value: input[name] };
    });
}

const names = { topic: "bench-topic-1", group: "floor" };
const requests: Record<string, Checked[]> = {
  publish: checkedValues(TOPIC_PATH, names),
  "receive 10": [
    ...checkedValues(GROUP_PATH, names),
    ...checkedValues(RECEIVE_HEADERS, { "Vqs-Max-Messages": 10 }),
    ...checkedValues(LEASE_HEADERS, { "Vqs-Visibility-Timeout-Seconds": 30 }),
  ],
  acknowledge: checkedValues(LEASE_PATH, names),
};

function time(values: readonly Checked[], compiled: boolean): number {
  let ok = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    for (const v of values)
      if (compiled ? v.compiled(v.value) : Value.Check(v.schema, v.value)) ok++;
  }
  const used = process.cpuUsage(start);
  if (ok !== N * values.length) throw new Error("a benchmark value failed its check");
  return (used.user + used.system) / N; // µs of CPU per request
}

console.log(
  `input checks, CPU µs per request, ${ROUNDS} rounds of ${N} requests each way, load ${loadAverage()}`,
);
console.log(
  "| request | checked values | interpreted (Value.Check) | compiled | compiled ÷ interpreted |",
);
console.log("| --- | ---: | ---: | ---: | ---: |");
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const [name, vals] of Object.entries(requests)) {
  const interpreted: number[] = [];
  const compiled: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    interpreted.push(time(vals, false));
    compiled.push(time(vals, true));
  }
  const [i, c] = [median(interpreted), median(compiled)];
  console.log(
    `| ${name} | ${vals.length} | ${i.toFixed(2)} | ${c.toFixed(2)} | ${(c / i).toFixed(3)}x |`,
  );
}
console.log(`load average at the end: ${loadAverage()}`);
