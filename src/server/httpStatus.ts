import type { ErrorPayload } from "../sync/index.js";

/** The HTTP status of an error answer: by the error's public kind, a few codes more precisely. */
export function httpStatusOf(error: ErrorPayload): number {
  switch (error.code) {
    case "UNAUTHENTICATED":
      return 401;
    case "FORBIDDEN":
      return 403;
    case "FUNCTION_NOT_FOUND":
    case "FILE_NOT_FOUND":
      return 404;
    case "MESSAGE_TOO_LARGE":
    case "FILE_TOO_LARGE":
      return 413;
  }
  switch (error.kind) {
    case "InvalidInput":
      return 400;
    case "Conflict":
      return 409;
    case "Unavailable":
    case "Fenced":
      return 503;
    default:
      return 500;
  }
}
