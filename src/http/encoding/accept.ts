// Accept negotiation for receive: multipart/mixed wins over application/x-ndjson when both are
// acceptable; anything else is a 400 (the contract requires one of the two).
import { AppError } from "../../errors.js";

export type ResponseFormat = "multipart" | "ndjson";

export function negotiateFormat(accept: string | undefined): ResponseFormat {
  const ranges = (accept ?? "")
    .split(",")
    .map((r) => r.split(";"))
    .filter(([, ...params]) => !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p)))
    .map(([type]) => (type ?? "").trim().toLowerCase());
  if (ranges.includes("multipart/mixed") || ranges.includes("multipart/*")) return "multipart";
  if (ranges.includes("application/x-ndjson")) return "ndjson";
  throw new AppError("unsupported_accept");
}
