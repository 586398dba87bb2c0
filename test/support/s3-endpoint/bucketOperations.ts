import type { Bucket, Buckets } from "./buckets.js";
import { isValidBucketName } from "./buckets.js";
import { parseDeleteObjectsRequest } from "./deleteObjectsRequest.js";
import { listPage, listResultXml, parseListRequest } from "./listObjects.js";
import type { Payload } from "./payload.js";
import { emptyResponse, xmlResponse, type S3Response } from "./response.js";
import { S3Error, invalidRequest } from "./S3Error.js";
import { element, parent, s3Document } from "./xml.js";

/** ListObjectsV2, DeleteObjects, CreateBucket and HeadBucket. */

export function listObjectsV2(bucket: Bucket, query: ReadonlyMap<string, string>): S3Response {
  const request = parseListRequest(query);
  return xmlResponse(200, listResultXml(bucket.name, request, listPage(bucket, request)));
}

/**
 * Deletes up to 1000 keys. A missing key is reported as Deleted (deleting is idempotent);
 * a version other than "null" cannot exist here and is reported as an Error entry. Quiet
 * mode lists the errors only.
 */
export function deleteObjects(bucket: Bucket, payload: Payload): S3Response {
  if (!payload.integrityChecked) {
    throw invalidRequest("Missing required header for this request: Content-MD5 OR x-amz-checksum-*");
  }
  const request = parseDeleteObjectsRequest(payload.body);
  const entries: string[] = [];
  for (const { key, versionId } of request.objects) {
    if (versionId !== undefined && versionId !== "null") {
      entries.push(
        parent(
          "Error",
          element("Key", key) +
            element("VersionId", versionId) +
            element("Code", "NoSuchVersion") +
            element("Message", "The specified version does not exist."),
        ),
      );
      continue;
    }
    bucket.delete(key);
    if (!request.quiet) entries.push(parent("Deleted", element("Key", key)));
  }
  return xmlResponse(200, s3Document("DeleteResult", entries.join("")));
}

export function createBucket(buckets: Buckets, name: string): S3Response {
  if (!isValidBucketName(name)) {
    throw new S3Error(400, "InvalidBucketName", "The specified bucket is not valid.", [["BucketName", name]]);
  }
  if (!buckets.create(name)) {
    throw new S3Error(
      409,
      "BucketAlreadyOwnedByYou",
      "Your previous request to create the named bucket succeeded and you already own it.",
      [["BucketName", name]],
    );
  }
  return emptyResponse(200, { location: `/${name}` });
}

export function headBucket(region: string): S3Response {
  return emptyResponse(200, { "x-amz-bucket-region": region });
}
