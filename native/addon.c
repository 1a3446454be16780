/*
 * addon.c: the module init of mcastctl's native addon (loaded by src/runtime/native-addon.ts):
 *
 *   { packetSocket: { open }, rawSocket: { open }, memoryTrim: { trim, limitArenas, reduceHeap } }
 *
 * N-API at a fixed version (NAPI_VERSION in binding.gyp): the same binary loads in every
 * Node release from 20 on, so one prebuilt file per platform serves them all.
 */
#include <node_api.h>

#include "addon.h"

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  struct {
    const char *name;
    napi_value (*build)(napi_env env);
  } parts[] = {
      {"packetSocket", packet_socket_exports},
      {"rawSocket", raw_socket_exports},
      {"memoryTrim", memory_trim_exports},
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    napi_value part = parts[i].build(env);
    if (part == NULL) return NULL; /* its exception is pending: the require() throws it */
    if (napi_set_named_property(env, exports, parts[i].name, part) != napi_ok) return NULL;
  }
  return exports;
}
