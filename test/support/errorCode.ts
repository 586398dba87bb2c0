/** The `code` of the error `action` throws, or undefined when it returns normally. */
export function codeOf(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}
