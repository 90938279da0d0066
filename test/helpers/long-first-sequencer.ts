// The order vitest hands test files to its workers. Without a results cache (a fresh clone, as
// CI runs) vitest starts the largest files first, and the nemesis's short file, the longest of all
// (about 3 minutes), was started near the end and ran alone for minutes after every other file
// had finished. This sequencer starts the files known to take longest first (longest first packs
// a fixed number of workers best), then the rest in vitest's own order. With a cache, vitest's
// order (by measured duration) stands: it already puts the long files first.
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Files that take 40 s or more (measured in a fresh clone's full run, 2026-12-03, with the
 * changes of that day), longest first. A file missing here still runs, only later; one listed
 * that no longer exists changes nothing.
 */
export const LONG_FILES = [
  "test/nemesis/short.test.ts",
  "test/nemesis/flow.test.ts",
  "test/integration/workflow/workflow-apps.test.ts",
  "test/integration/cli/manage.test.ts",
  "test/integration/workflow/world-5-sequential-replays.test.ts",
  "test/integration/messages/delay-scale.test.ts",
  "test/integration/workflow/world-testing-5.test.ts",
  "test/faults/gateway-faults.test.ts",
  "test/integration/cli/messages.test.ts",
  "test/build/build.test.ts",
  "test/integration/management/topic-pages.test.ts",
  "test/integration/service/bounded-answers.test.ts",
  "test/integration/messages/timer-fairness.test.ts",
  "test/integration/service/short-lived-topics.test.ts",
  "test/integration/cli/triggers.test.ts",
  "test/integration/messages/large-bodies.test.ts",
  "test/integration/consumers/push-lease.test.ts",
  "test/integration/workflow/workflow-local.test.ts",
  "test/integration/messages/large-downloads.test.ts",
  "test/faults/push-faults.test.ts",
];

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const ranks = new Map(LONG_FILES.map((f, i) => [`${root}/${f}`, i]));
    const rank = (spec: TestSpecification) => ranks.get(spec.moduleId) ?? LONG_FILES.length;
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    // Array.prototype.sort is stable: within a rank, vitest's order is kept.
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => group(a.spec) - group(b.spec) || rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}
