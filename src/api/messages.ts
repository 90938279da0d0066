// The message operations' shared shapes (TypeBox): what the API, the CLI and the console say
// about a delivered message.
import { Type, type Static } from "typebox";
import { NAME } from "./schema.js";

export const DEAD_LETTER_ORIGIN = Type.Object(
  {
    topic: NAME,
    consumerGroup: NAME,
    messageId: Type.String(),
    deliveryCount: Type.Integer({ minimum: 1 }),
  },
  { $id: "DeadLetterOrigin", description: "Where a dead-letter copy came from." },
);

/** Where a dead-letter copy came from (a message's `deadLetter`). */
export type DeadLetterOrigin = Static<typeof DEAD_LETTER_ORIGIN>;
