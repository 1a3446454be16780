/* napi_args.c: see napi_args.h. */
#include "napi_args.h"

#include <stdint.h>
#include <stdio.h>

#include "node_errors.h"

void *unwrap_this(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  napi_value self;
  void *data = NULL;
  if (napi_get_cb_info(env, info, argc, argv, &self, NULL) != napi_ok) {
    throw_napi_failure(env, "napi_get_cb_info");
    return NULL;
  }
  if (napi_unwrap(env, self, &data) != napi_ok || data == NULL) {
    throw_napi_failure(env, "napi_unwrap (method called on a foreign object?)");
    return NULL;
  }
  return data;
}

bool read_integer(napi_env env, napi_value value, double min, double max, const char *what,
                  double *out) {
  napi_valuetype type;
  double d;
  char message[160];
  if (napi_typeof(env, value, &type) != napi_ok) {
    throw_napi_failure(env, "napi_typeof");
    return false;
  }
  if (type != napi_number) {
    snprintf(message, sizeof message, "%s must be a number", what);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
    return false;
  }
  if (napi_get_value_double(env, value, &d) != napi_ok) {
    throw_napi_failure(env, "napi_get_value_double");
    return false;
  }
  /* The negated comparison also rejects NaN. */
  if (!(d >= min && d <= max) || (double)(int64_t)d != d) {
    snprintf(message, sizeof message, "%s must be an integer in [%.0f, %.0f]", what, min, max);
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", message);
    return false;
  }
  *out = d;
  return true;
}
