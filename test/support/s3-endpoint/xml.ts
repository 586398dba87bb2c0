/**
 * The small XML toolkit the endpoint needs: escaping text into elements, building the
 * documents S3 answers with, and decoding entity references in parsed request text.
 *
 * Escaping writes `\t`, `\n`, `\r` and other control characters as numeric references:
 * XML parsers normalise a raw `\r\n` to `\n`, which would change a key on its way back.
 */

export const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';
export const S3_XML_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/";

const NAMED_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

// Control characters: C0 (including \t \n \r) and DEL.
const NEEDS_ESCAPE = /[&<>"'\u0000-\u001f\u007f]/g;

export function escapeXml(text: string): string {
  return text.replace(NEEDS_ESCAPE, (character) => {
    const named = NAMED_ESCAPES[character];
    if (named !== undefined) return named;
    return `&#${character.charCodeAt(0)};`;
  });
}

/** `<name>text</name>` with the text escaped. */
export function element(name: string, text: string | number | boolean): string {
  return `<${name}>${escapeXml(String(text))}</${name}>`;
}

/** `<name>…</name>` around children that are already XML. */
export function parent(name: string, childrenXml: string): string {
  return `<${name}>${childrenXml}</${name}>`;
}

/** A complete document: the declaration and a root element in the S3 namespace. */
export function s3Document(rootName: string, childrenXml: string): string {
  return `${XML_DECLARATION}<${rootName} xmlns="${S3_XML_NAMESPACE}">${childrenXml}</${rootName}>`;
}

export function errorDocument(
  code: string,
  message: string,
  fields: readonly (readonly [string, string])[],
  requestId: string,
  hostId: string,
): string {
  const extra = fields.map(([name, value]) => element(name, value)).join("");
  return (
    `${XML_DECLARATION}<Error>${element("Code", code)}${element("Message", message)}${extra}` +
    `${element("RequestId", requestId)}${element("HostId", hostId)}</Error>`
  );
}

const XML_ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/**
 * Decodes the five XML entities and numeric references in parsed text. Returns undefined
 * for an unknown entity or an invalid code point: the document is malformed.
 */
export function decodeXmlText(text: string): string | undefined {
  let malformed = false;
  const decoded = text.replace(/&([^;&]*);?/g, (whole, reference: string) => {
    if (!whole.endsWith(";")) {
      malformed = true;
      return whole;
    }
    const named = XML_ENTITIES[reference];
    if (named !== undefined) return named;
    const codePoint = numericReference(reference);
    if (codePoint === undefined) {
      malformed = true;
      return whole;
    }
    return String.fromCodePoint(codePoint);
  });
  return malformed ? undefined : decoded;
}

function numericReference(reference: string): number | undefined {
  const match = /^#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}))$/.exec(reference);
  if (match === null) return undefined;
  const codePoint = match[1] !== undefined ? parseInt(match[1], 16) : parseInt(match[2] ?? "", 10);
  const isSurrogate = codePoint >= 0xd800 && codePoint <= 0xdfff;
  return codePoint > 0x10ffff || isSurrogate ? undefined : codePoint;
}
