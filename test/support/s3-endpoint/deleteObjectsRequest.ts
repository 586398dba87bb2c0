import { XMLParser, XMLValidator } from "fast-xml-parser";
import { DELETE_BATCH_KEYS_MAX } from "./endpointLimits.js";
import { malformedXml } from "./S3Error.js";
import { decodeXmlText } from "./xml.js";

/**
 * The body of DeleteObjects: `<Delete><Object><Key/>[<VersionId/>]</Object>…
 * [<Quiet>true</Quiet>]</Delete>`, 1 to 1000 objects. Anything else is 400 MalformedXML,
 * as S3 answers. Entity references are decoded here (the parser is told not to), so that
 * keys with `&#x0D;` and friends, which the SDK sends, arrive intact.
 */

export interface DeleteObjectsRequest {
  readonly objects: readonly { readonly key: string; readonly versionId: string | undefined }[];
  readonly quiet: boolean;
}

const parser = new XMLParser({
  ignoreAttributes: true,
  ignoreDeclaration: true,
  parseTagValue: false,
  trimValues: false,
  processEntities: false,
  isArray: (name) => name === "Object",
});

export function parseDeleteObjectsRequest(body: Uint8Array): DeleteObjectsRequest {
  const text = Buffer.from(body).toString("utf8");
  if (XMLValidator.validate(text) !== true) throw malformedXml();
  const document: unknown = parser.parse(text);
  const root = field(document, "Delete");
  const objects = field(root, "Object");
  if (!Array.isArray(objects) || objects.length === 0 || objects.length > DELETE_BATCH_KEYS_MAX) throw malformedXml();
  return { objects: objects.map((object: unknown) => objectEntry(object)), quiet: quietFlag(field(root, "Quiet")) };
}

function objectEntry(object: unknown): { key: string; versionId: string | undefined } {
  const key = textOf(field(object, "Key"));
  if (key === undefined || key === "") throw malformedXml();
  const rawVersionId = field(object, "VersionId");
  const versionId = rawVersionId === undefined ? undefined : textOf(rawVersionId);
  if (rawVersionId !== undefined && versionId === undefined) throw malformedXml();
  return { key, versionId };
}

function quietFlag(value: unknown): boolean {
  if (value === undefined) return false;
  const text = textOf(value)?.trim().toLowerCase();
  if (text !== "true" && text !== "false") throw malformedXml();
  return text === "true";
}

/** The decoded text of an element that has no child elements; "" for an empty element. */
function textOf(value: unknown): string | undefined {
  if (value === "") return "";
  if (typeof value !== "string") return undefined;
  return decodeXmlText(value);
}

function field(value: unknown, name: string): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw malformedXml();
  return (value as Record<string, unknown>)[name];
}
