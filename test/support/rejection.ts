/** What `promise` rejected with, as the error fields a test reads; fails the test if it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<{ code: string; kind: string; message: string; data: unknown; details: Record<string, unknown> }> {
  try {
    await promise;
  } catch (error) {
    return error as never;
  }
  throw new Error("expected a rejection");
}
