/**
 * raw-socket throws `new Error(strerror(errno))`: no `code`, only glibc's text. This
 * table turns that text back into the errno name so that the socket's callers can match on
 * codes, never on messages. (musl's texts differ for a few of these: an unknown text
 * keeps its message and gets errno undefined, and the error stays a generic 'io' error.)
 */
const ERRNO_BY_STRERROR = new Map<string, string>([
  ['Operation not permitted', 'EPERM'],
  ['No such file or directory', 'ENOENT'],
  ['Bad file descriptor', 'EBADF'],
  ['Cannot allocate memory', 'ENOMEM'],
  ['Out of memory', 'ENOMEM'],
  ['Permission denied', 'EACCES'],
  ['Bad address', 'EFAULT'],
  ['File exists', 'EEXIST'],
  ['No such device', 'ENODEV'],
  ['No such device or address', 'ENXIO'],
  ['Invalid argument', 'EINVAL'],
  ['Too many open files in system', 'ENFILE'],
  ['Too many open files', 'EMFILE'],
  ['Protocol not available', 'ENOPROTOOPT'],
  ['Protocol not supported', 'EPROTONOSUPPORT'],
  ['Operation not supported', 'EOPNOTSUPP'],
  ['Address family not supported by protocol', 'EAFNOSUPPORT'],
  ['Address already in use', 'EADDRINUSE'],
  ['Address in use', 'EADDRINUSE'],
  ['Cannot assign requested address', 'EADDRNOTAVAIL'],
  ['Address not available', 'EADDRNOTAVAIL'],
  ['No buffer space available', 'ENOBUFS'],
  ['Network is down', 'ENETDOWN'],
  ['Network is unreachable', 'ENETUNREACH'],
]);

/** The errno name of an error thrown by raw-socket (or a Node system error), if known. */
export function errnoOf(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  return ERRNO_BY_STRERROR.get(error.message);
}
