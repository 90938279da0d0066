// What a pushed group's consumer may have out at once (`max_ack_pending`, JetStream's cap across
// gateways): its `maxConcurrency`, and for a group limited per key (`flowControl`: concurrency,
// rate or ordered) as many more as one gateway may hold for keys without room
// (MAX_HELD_PER_GROUP), so that messages of waiting keys held on the gateways never leave the
// group with nothing to push for its other keys. The pushes themselves stay within `maxConcurrency` on each gateway (GroupPushes);
// see docs/architecture.md, "Flow control".
import { MAX_HELD_PER_GROUP } from "../flow-control/flow-gate.js";
import { keyRulesOf } from "../flow-control/key-rules.js";
import type { PushedSettings } from "./pusher.js";

export function pushedMaxAckPending(settings: PushedSettings): number {
  const keyed = keyRulesOf(settings.flowControl) !== null;
  return settings.push.maxConcurrency + (keyed ? MAX_HELD_PER_GROUP : 0);
}
