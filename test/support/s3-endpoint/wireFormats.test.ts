/**
 * Scenario: the endpoint's pure wire pieces on their own — checksum vectors, the
 * aws-chunked decoder (the S3.md example and malformed framings), UTF-8 key order, XML
 * escaping round trips, Range parsing and SigV4 header parsing — so that a failure in the
 * HTTP tests can be told apart from a failure in these building blocks.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeAwsChunked, encodeAwsChunked } from "./awsChunked.js";
import { parseByteRange } from "./byteRange.js";
import { checksumBase64, crc32, crc32c, crc64nvme } from "./checksums.js";
import { compareUtf8 } from "./keyOrder.js";
import { amzDateOf, parseAmzDate, parseAuthorization } from "./sigv4.js";
import { decodeXmlText, escapeXml } from "./xml.js";

const text = (value: string) => Buffer.from(value, "utf8");

describe("checksums", () => {
  it("match the published check values for '123456789'", () => {
    expect(crc32(text("123456789")).toString(16)).toBe("cbf43926");
    expect(crc32c(text("123456789")).toString(16)).toBe("e3069283");
    expect(Buffer.from(crc64nvme(text("123456789"))).toString("hex")).toBe("ae8b14860a799888");
  });

  it("encode as S3 sends them (base64 of the big-endian digest)", () => {
    expect(checksumBase64("crc32", text("hello world"))).toBe("DUoRhQ==");
    expect(checksumBase64("crc32", new Uint8Array())).toBe("AAAAAA==");
    expect(checksumBase64("sha256", text(""))).toBe("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  });
});

describe("aws-chunked decoding", () => {
  it("decodes the S3.md example into data and trailers", () => {
    const wire = text("6\r\nhello \r\n5\r\nworld\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n");
    const decoded = decodeAwsChunked(wire);
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(Buffer.from(decoded.data).toString()).toBe("hello world");
    expect([...decoded.trailers]).toEqual([["x-amz-checksum-crc32", "DUoRhQ=="]]);
  });

  it("round-trips what encodeAwsChunked produces, including an empty body", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }), (chunks) => {
        const decoded = decodeAwsChunked(encodeAwsChunked(chunks, { "x-amz-checksum-crc32": "AAAAAA==" }));
        expect(decoded.ok && Buffer.from(decoded.data).equals(Buffer.concat(chunks))).toBe(true);
      }),
    );
  });

  it.each([
    ["a size that is not hex", "zz\r\nhello\r\n0\r\n\r\n"],
    ["a chunk shorter than declared", "10\r\nhello\r\n0\r\n\r\n"],
    ["data not followed by CRLF", "5\r\nhelloX0\r\n\r\n"],
    ["no final empty line", "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n"],
    ["bytes after the end", "5\r\nhello\r\n0\r\n\r\nextra"],
    ["a trailer without a colon", "5\r\nhello\r\n0\r\nnonsense\r\n\r\n"],
  ])("rejects %s", (_label, wire) => {
    expect(decodeAwsChunked(text(wire)).ok).toBe(false);
  });
});

describe("key order", () => {
  it("agrees with UTF-8 byte order for any strings, including astral characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (left, right) => {
        expect(Math.sign(compareUtf8(left, right))).toBe(Math.sign(Buffer.compare(text(left), text(right))));
      }),
      { numRuns: 2000 },
    );
  });

  it("puts U+1F600 after U+FFFD, unlike JavaScript's < operator", () => {
    expect("\u{1F600}" < "\uFFFD").toBe(true);
    expect(compareUtf8("\u{1F600}", "\uFFFD")).toBeGreaterThan(0);
  });
});

describe("XML text", () => {
  it("escapes and decodes back to the same string, control characters included", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (value) => {
        expect(decodeXmlText(escapeXml(value))).toBe(value);
      }),
    );
    expect(escapeXml(`a&<>"'\r\n`)).toBe("a&amp;&lt;&gt;&quot;&apos;&#13;&#10;");
  });

  it("decodes the numeric references the SDK sends and refuses unknown entities", () => {
    expect(decodeXmlText("a&#x0D;&#x0A;&#9;&#x1F600;")).toBe("a\r\n\t\u{1F600}");
    expect(decodeXmlText("&nbsp;")).toBeUndefined();
    expect(decodeXmlText("a & b")).toBeUndefined();
    expect(decodeXmlText("&#xD800;")).toBeUndefined();
  });
});

describe("Range header", () => {
  it.each([
    ["bytes=0-4", 10, { kind: "part", start: 0, endInclusive: 4 }],
    ["bytes=5-", 10, { kind: "part", start: 5, endInclusive: 9 }],
    ["bytes=8-100", 10, { kind: "part", start: 8, endInclusive: 9 }],
    ["bytes=-3", 10, { kind: "part", start: 7, endInclusive: 9 }],
    ["bytes=-30", 10, { kind: "part", start: 0, endInclusive: 9 }],
    ["bytes=10-", 10, { kind: "unsatisfiable" }],
    ["bytes=-0", 10, { kind: "unsatisfiable" }],
    ["bytes=0-0", 0, { kind: "unsatisfiable" }],
    ["bytes=5-2", 10, { kind: "whole" }],
    ["bytes=0-1,3-4", 10, { kind: "whole" }],
    ["items=0-1", 10, { kind: "whole" }],
  ] as const)("%s of %i bytes", (header, size, expected) => {
    expect(parseByteRange(header, size)).toEqual(expected);
  });
});

describe("SigV4 parsing", () => {
  it("reads the Authorization header the SDK sends, with or without spaces", () => {
    const signature = "a".repeat(64);
    for (const separator of [", ", ","]) {
      const header = `AWS4-HMAC-SHA256 Credential=AK/20261201/us-east-1/s3/aws4_request${separator}SignedHeaders=host;x-amz-date${separator}Signature=${signature}`;
      expect(parseAuthorization(header)).toEqual({
        accessKeyId: "AK",
        scopeDate: "20261201",
        region: "us-east-1",
        service: "s3",
        signedHeaders: ["host", "x-amz-date"],
        signature,
      });
    }
  });

  it.each([
    "AWS4-HMAC-SHA256 Credential=AK/20261201/us-east-1/s3/aws4_request, SignedHeaders=host",
    "AWS4-HMAC-SHA256 Credential=AK/2026-12-01/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + "a".repeat(64),
    "AWS4-HMAC-SHA256 Credential=AK/20261201/us-east-1/s3, SignedHeaders=host, Signature=" + "a".repeat(64),
    "AWS4-HMAC-SHA256 Credential=AK/20261201/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=xyz",
    "AWS AK:signature",
  ])("refuses %s", (header) => {
    expect(parseAuthorization(header)).toBeUndefined();
  });

  it("formats and parses x-amz-date, refusing impossible dates", () => {
    const ms = Date.UTC(2026, 11, 1, 6, 44, 7);
    expect(amzDateOf(ms)).toBe("20261201T064407Z");
    expect(parseAmzDate("20261201T064407Z")).toBe(ms);
    expect(parseAmzDate("20261301T064407Z")).toBeUndefined();
    expect(parseAmzDate("2026-12-01T06:44:07Z")).toBeUndefined();
  });
});
