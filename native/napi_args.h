/*
 * napi_args.h: how every part of the addon reads what JS passed it: the object a method
 * was called on, and integral numbers in a range. Errors are thrown as Node's own argument
 * errors (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE).
 *
 * Every function that takes a napi_env runs on the JS thread.
 */
#ifndef MCASTCTL_NAPI_ARGS_H
#define MCASTCTL_NAPI_ARGS_H

#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The native state a method's `this` wraps (napi_wrap), with up to *argc arguments in
 * argv. NULL, with an exception pending, when `this` wraps nothing (a foreign object).
 */
void *unwrap_this(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv);

/* Reads an integral number in [min, max]; false with an exception pending otherwise. */
bool read_integer(napi_env env, napi_value value, double min, double max, const char *what,
                  double *out);

#endif
