/*
 * addon.h: the parts of mcastctl's one native addon. Each part builds the object of its
 * own functions; addon.c puts them together as the module's exports. One addon rather
 * than one per part: a single prebuilt file to ship and load, and one build where none fits.
 */
#ifndef MCASTCTL_ADDON_H
#define MCASTCTL_ADDON_H

#include <node_api.h>

/* Each returns its part's object, or NULL with an exception pending. */
napi_value packet_socket_exports(napi_env env); /* packet_socket.c: AF_PACKET capture */
napi_value raw_socket_exports(napi_env env);    /* raw_socket.c: raw IP sockets (mroute) */
napi_value memory_trim_exports(napi_env env);   /* memory_trim.c: malloc_trim, arenas */

#endif
