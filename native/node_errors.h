/*
 * node_errors.h: the errors every part of the addon throws, shaped like Node's own, so
 * that the TypeScript side matches on `code` whatever part of the addon failed.
 *
 * Every function that takes a napi_env runs on the JS thread.
 */
#ifndef MCASTCTL_NODE_ERRORS_H
#define MCASTCTL_NODE_ERRORS_H

#include <node_api.h>
#include <stdbool.h>

/*
 * Makes sure a JS exception is pending after a failed N-API call: the call may have left
 * one (a getter threw), otherwise an Error describing the failure is thrown.
 */
void throw_napi_failure(napi_env env, const char *call);

/* Evaluates an N-API call; on failure leaves an exception pending and returns NULL. */
#define NAPI_CALL(env, call)                                                              \
  do {                                                                                    \
    if ((call) != napi_ok) {                                                              \
      throw_napi_failure((env), #call);                                                   \
      return NULL;                                                                        \
    }                                                                                     \
  } while (0)

/*
 * Builds an Error like Node's system errors: "EPERM: Operation not permitted, socket 'eth0'"
 * with code, errno (negated) and syscall properties. `subject` (an interface, a socket's
 * kind) ends the message when it is not NULL. Returns NULL (exception pending) on failure.
 */
napi_value make_system_error(napi_env env, int err, const char *syscall, const char *subject);

/* Throws make_system_error(...), or leaves the exception its failure left pending. */
void throw_system_error(napi_env env, int err, const char *syscall, const char *subject);

/*
 * Inside a libuv callback there is no JS caller to throw to. Report whatever went wrong as
 * an uncaught exception ('uncaughtException', or the process dies with the stack trace),
 * as Node does for exceptions thrown by its own I/O callbacks. Never swallow it: a pending
 * exception left behind would resurface at some unrelated later N-API call.
 *
 * Returns false if even that is impossible: the environment is shutting down (a Worker
 * being terminated cannot run JS any more). The caller then stops calling into JS.
 */
bool raise_uncaught(napi_env env, const char *what);

#endif
