/** The `code` of the error `action` throws, or undefined when it returns normally. */
export function codeOf(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

/** The SDK error name and HTTP status of a call that must fail (S3 answers are classified by status). */
export async function s3FailureOf(call: Promise<unknown>): Promise<{ name: string; status: number | undefined }> {
  try {
    await call;
  } catch (error) {
    const failure = error as { name: string; $metadata?: { httpStatusCode?: number } };
    return { name: failure.name, status: failure.$metadata?.httpStatusCode };
  }
  throw new Error("the call was expected to fail");
}
