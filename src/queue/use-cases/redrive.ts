// Redrive: a dead-letter topic's messages moved back to where they came from (or to a target),
// each as a new message with the time it had left, copied once whichever redrive moves it.
import { AppError } from "../../errors.js";
import { LIMITS } from "../limits.js";
import type { TopicAddress } from "../namespace.js";
import type { QueueContext } from "./queue-context.js";

/** Messages read from a dead-letter topic at a time by redrive. */
const REDRIVE_BATCH = 100;

export class Redriving {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /**
   * Moves up to `limit` messages of a dead-letter topic back, oldest first: each to `target`,
   * or (without one) to the topic it was dead-lettered from, as a new message (its delivery
   * count starts again at 1) with the time it had left; then removes it from the dead-letter
   * topic. A message that is not a dead-letter copy stays unless a target is given; an expired
   * one is removed. Each is copied once, whichever redrive (or retry of one) moves it: the copy
   * carries a deduplication token of its place in the dead-letter topic.
   */
  async redrive(
    deadLetters: TopicAddress,
    options: { readonly target: string | null; readonly limit: number },
  ): Promise<{ readonly moved: number; readonly remaining: number }> {
    if ((await this.#ctx.broker.countMessages(deadLetters)) === null) {
      throw new AppError("topic_not_found");
    }
    if (options.target === deadLetters.topic) {
      throw new AppError("invalid_request_body", {
        message: "A dead-letter topic cannot be redriven into itself.",
      });
    }
    let moved = 0;
    let from = 1;
    while (moved < options.limit) {
      const batch = await this.#ctx.broker.readTopic(deadLetters, from, REDRIVE_BATCH);
      if (batch.length === 0) break;
      for (const { streamSeq, message } of batch) {
        from = streamSeq + 1;
        if (message.expiresAtMs <= this.#ctx.now()) {
          await this.#ctx.broker.removeMessage(deadLetters, streamSeq);
          if (message.body) await this.#ctx.bodies?.remove(deadLetters, message.body);
          continue;
        }
        const target = options.target ?? message.deadLetter?.topic;
        if (!target || target === deadLetters.topic) continue; // nowhere to go: it stays
        const left = Math.ceil((message.expiresAtMs - this.#ctx.now()) / 1000);
        await this.#ctx.copies.copy(
          deadLetters,
          message,
          { namespace: deadLetters.namespace, topic: target },
          {
            retentionSeconds: Math.max(LIMITS.retentionSeconds.min, left),
            dedupToken: `redrive\n${deadLetters.topic}\n${streamSeq}`,
          },
        );
        await this.#ctx.broker.removeMessage(deadLetters, streamSeq);
        if (message.body) await this.#ctx.bodies?.remove(deadLetters, message.body);
        moved++;
        if (moved >= options.limit) break;
      }
    }
    this.#ctx.observer.redriven(moved);
    return { moved, remaining: (await this.#ctx.broker.countMessages(deadLetters)) ?? 0 };
  }
}
