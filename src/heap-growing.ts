// The gateway process's old-generation growing factor (heapGrowingPercent, fixed), set once at
// start. Large bodies pass through a gateway as short-lived external buffers (socket reads, NATS
// writes) that V8 counts against the old generation's limit until the next full collection. V8
// sets that limit from the live heap and how fast the old generation grows on its own, which a
// streaming gateway barely does: after any full collection (the memory reducer's, once the
// gateway goes idle) it chose the least factor, a limit some 8 MB above the live heap, and the
// external bytes of the next uploads reached it before the young generation's own collection
// (at 32 MB of young external memory) came round. From then on every few MB of upload ran a full
// collection, for as long as uploads came (docs/architecture.md, "Garbage collection under large
// transfers"). A fixed factor keeps the limit far enough above the live heap for the young
// collections to free those buffers first.
import { setFlagsFromString } from "node:v8";

/** Applies the factor (1 + percent / 100); 0 leaves V8's own heuristic. */
export function setHeapGrowing(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${Math.round(percent)}`);
}
