// The size of a gateway-wide byte budget (src/queue/admission/in-flight/byte-budget.ts): a share of the V8
// heap the process was given (`--max-old-space-size`, or what Node chose from the container's
// memory), never a setting.
import { getHeapStatistics } from "node:v8";

/** `1 / divisor` of the V8 heap limit, at least `floor` bytes. */
export function heapShare(divisor: number, floor: number): number {
  return Math.max(floor, Math.floor(getHeapStatistics().heap_size_limit / divisor));
}
