/*
 * memory_trim: gives V8's and the C heap's free memory back to the system (`memoryTrim`
 * of the addon).
 *
 * glibc's malloc keeps what a program frees in its arenas (one per thread that ever
 * allocated, up to eight per core) for the next allocation; only memory at the top of an
 * arena goes back by itself. After a flood, when the daemon has dropped the state it
 * took, trim() hands every arena's free pages to the kernel (malloc_trim(3)), so that its
 * resident memory returns near what it was before. Without glibc there is nothing to do.
 */
#include <node_api.h>

#include "addon.h"

#include <dlfcn.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value js_trim(napi_env env, napi_callback_info info) {
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value result;
  if (napi_get_boolean(env, released != 0, &result) != napi_ok) return NULL;
  return result;
}

/*
 * limitArenas(n): at most n malloc arenas from now on (mallopt M_ARENA_MAX; the default is
 * eight per core). Threads then share arenas, and free memory is less scattered over
 * arenas that each keep their own. True when glibc took it.
 */
static napi_value js_limit_arenas(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t count = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_int32(env, argv[0], &count) != napi_ok) {
    napi_throw_type_error(env, NULL, "limitArenas(n) takes a number of arenas");
    return NULL;
  }
  int taken = 0;
#ifdef __GLIBC__
  if (count > 0) taken = mallopt(M_ARENA_MAX, count);
#endif
  napi_value result;
  if (napi_get_boolean(env, taken != 0, &result) != napi_ok) return NULL;
  return result;
}

/*
 * reduceHeap(): V8's collection for low memory (v8::Isolate::LowMemoryNotification), the
 * one that compacts the heap and hands its emptied pages back at once. A collection from
 * JavaScript (gc()) frees the garbage but keeps the pages, each with a little that lives
 * on, committed, and pools what it empties for the next allocation; V8's memory reducer
 * compacts, but only some seconds after a collection. N-API has no call for it, so the
 * two V8 functions are looked up in the running node by their exported names (C++
 * member functions take their object first). False when they are not there: then
 * nothing is done.
 */
typedef void *(*isolate_current_fn)(void);
typedef void (*isolate_notification_fn)(void *isolate);

static napi_value js_reduce_heap(napi_env env, napi_callback_info info) {
  static isolate_current_fn current;
  static isolate_notification_fn low_memory;
  if (current == NULL || low_memory == NULL) {
    current = (isolate_current_fn)dlsym(RTLD_DEFAULT, "_ZN2v87Isolate10GetCurrentEv");
    low_memory = (isolate_notification_fn)dlsym(RTLD_DEFAULT, "_ZN2v87Isolate21LowMemoryNotificationEv");
  }
  void *isolate = current == NULL ? NULL : current();
  if (isolate != NULL && low_memory != NULL) low_memory(isolate);
  napi_value result;
  if (napi_get_boolean(env, isolate != NULL && low_memory != NULL, &result) != napi_ok) return NULL;
  return result;
}

napi_value memory_trim_exports(napi_env env) {
  napi_value exports, trim_fn, limit_fn, reduce_fn;
  if (napi_create_object(env, &exports) != napi_ok) return NULL;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, js_trim, NULL, &trim_fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", trim_fn) != napi_ok) return NULL;
  if (napi_create_function(env, "limitArenas", NAPI_AUTO_LENGTH, js_limit_arenas, NULL, &limit_fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "limitArenas", limit_fn) != napi_ok) return NULL;
  if (napi_create_function(env, "reduceHeap", NAPI_AUTO_LENGTH, js_reduce_heap, NULL, &reduce_fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "reduceHeap", reduce_fn) != napi_ok) return NULL;
  return exports;
}
