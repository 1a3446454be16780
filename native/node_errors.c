/* node_errors.c: see node_errors.h. */
#include "node_errors.h"

#include <stdio.h>
#include <string.h>

void throw_napi_failure(napi_env env, const char *call) {
  const napi_extended_error_info *info = NULL;
  char message[256];
  /* Read the error info before any other N-API call overwrites it. */
  const char *detail = (napi_get_last_error_info(env, &info) == napi_ok && info != NULL &&
                        info->error_message != NULL)
                           ? info->error_message
                           : "unknown error";
  snprintf(message, sizeof message, "mcastctl native addon: %s failed: %s", call, detail);

  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) return;
  napi_throw_error(env, "ERR_NAPI_CALL_FAILED", message);
}

napi_value make_system_error(napi_env env, int err, const char *syscall, const char *subject) {
  char fallback[16];
  const char *name = strerrorname_np(err); /* glibc >= 2.32 */
  if (name == NULL) {
    snprintf(fallback, sizeof fallback, "E%d", err);
    name = fallback;
  }
  char message[256];
  if (subject != NULL)
    snprintf(message, sizeof message, "%s: %s, %s '%s'", name, strerror(err), syscall, subject);
  else
    snprintf(message, sizeof message, "%s: %s, %s", name, strerror(err), syscall);

  napi_value code, text, error, errno_value, syscall_value;
  NAPI_CALL(env, napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code));
  NAPI_CALL(env, napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &text));
  NAPI_CALL(env, napi_create_error(env, code, text, &error));
  NAPI_CALL(env, napi_create_int32(env, -err, &errno_value));
  NAPI_CALL(env, napi_set_named_property(env, error, "errno", errno_value));
  NAPI_CALL(env, napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &syscall_value));
  NAPI_CALL(env, napi_set_named_property(env, error, "syscall", syscall_value));
  return error;
}

void throw_system_error(napi_env env, int err, const char *syscall, const char *subject) {
  napi_value error = make_system_error(env, err, syscall, subject);
  if (error != NULL) napi_throw(env, error); /* else an exception is already pending */
}

bool raise_uncaught(napi_env env, const char *what) {
  bool pending = false;
  napi_value exception = NULL;
  if (napi_is_exception_pending(env, &pending) != napi_ok || !pending) {
    /* An N-API call failed without a JS exception: turn it into one first. */
    throw_napi_failure(env, what);
  }
  if (napi_get_and_clear_last_exception(env, &exception) != napi_ok || exception == NULL)
    return false;
  return napi_fatal_exception(env, exception) == napi_ok;
}
