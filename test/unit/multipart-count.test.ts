// Counting a multipart body's parts on its bytes, the batch route's check on its parser.
import { describe, expect, it } from "vitest";
import { boundaryOf, countParts } from "../../src/http/encoding/multipart-count.js";

const body = (parts: string[], close = true) =>
  Buffer.from(parts.map((p) => `--b-1\r\n${p}\r\n`).join("") + (close ? "--b-1--\r\n" : ""));

describe("multipart part count", () => {
  it("reads the boundary, quoted or not", () => {
    expect(boundaryOf("multipart/mixed; boundary=b-1")).toBe("b-1");
    expect(boundaryOf('multipart/mixed; charset=x; Boundary="a b"')).toBe("a b");
    expect(boundaryOf("multipart/mixed")).toBeNull();
  });

  it("counts parts with and without headers, up to the close delimiter", () => {
    expect(
      countParts(body(["Content-Type: text/plain\r\n\r\none", "\r\ntwo", "\r\nthree"]), "b-1"),
    ).toBe(3);
    expect(countParts(body([]), "b-1")).toBe(0);
    // What follows the close delimiter (the epilogue) is not a part.
    const epilogue = Buffer.concat([body(["\r\none"]), Buffer.from("--b-1\r\n\r\nnot a part")]);
    expect(countParts(epilogue, "b-1")).toBe(1);
  });

  it("does not count the boundary's text inside a line, or a preamble", () => {
    const b = Buffer.from("preamble --b-1\r\n--b-1\r\n\r\nx --b-1 y\r\n--b-1--\r\n");
    expect(countParts(b, "b-1")).toBe(1);
  });
});
