/**
 * The errno name of a kernel refusal: the raw sockets (native/raw_socket.c) throw errors
 * shaped like Node's system errors, with the name in `code`, so callers match on codes,
 * never on messages.
 */
export function errnoOf(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
}
