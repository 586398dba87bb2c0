import { messageOf } from "./adminApi.js";

/** A failure shown where it happened (a route the node lacks, a refused edit), never a broken page. */
export function ErrorLine({ error, testId }: { error: unknown; testId?: string }) {
  if (error === null || error === undefined) return null;
  return (
    <p class="error" role="alert" data-testid={testId ?? "error"}>
      {messageOf(error)}
    </p>
  );
}
