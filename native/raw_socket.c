/*
 * raw_socket.c: raw IP sockets (SOCK_RAW of AF_INET or AF_INET6) for Node.js through
 * N-API: what the kernel's multicast routing is spoken over. The IPv4 multicast router is
 * a raw IPPROTO_IGMP socket and the IPv6 one a raw ICMPv6 socket: the MRT_* and MRT6_*
 * options are set on them, and the kernel queues its upcalls (igmpmsg, mrt6msg) on them
 * as if they were received packets.
 *
 * JS surface, `rawSocket` of the addon (wrapped and typed by src/transport/raw-socket.ts):
 *
 *   open(family, protocol, { receiveBufferBytes }) -> socket
 *       family: 4 (AF_INET) or 6 (AF_INET6); protocol: IPPROTO_* (2 IGMP, 58 ICMPv6)
 *   socket.setOption(level, option, value)   setsockopt: value an int32, or the bytes of
 *                                            a Uint8Array (a struct the caller encoded)
 *   socket.start(onMessage(data), onError(error))
 *       onMessage gets each datagram as a fresh Buffer (an IPv4 raw socket's start with the
 *       IP header; an IPv6 one's do not, as the kernel delivers them). After a receive
 *       error the socket is closed, then onError is called once.
 *   socket.close()                           idempotent; also done by the GC finalizer
 *
 * System errors are thrown (or passed to onError) as Error objects shaped like Node's own:
 * code = errno name ('EPERM'), errno = negated errno, syscall = the failing call.
 *
 * Every function that takes a napi_env runs on the JS thread: N-API entry points, the
 * libuv poll/close callbacks and the GC finalizer all run on the loop of that environment.
 */

#include <node_api.h>
#include <uv.h>

#include "addon.h"
#include "napi_args.h"
#include "node_errors.h"
#include "polled_socket.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The largest IP datagram: an upcall is far smaller, and whatever else a raw socket
   receives fits whole. */
#define RECEIVE_BUFFER_BYTES 65536u
/* Datagrams read per wakeup: bounded so that a flood of upcalls cannot starve the rest
   of the event loop. */
#define MESSAGES_PER_WAKEUP 64

/* ------------------------------------------------------------------------------------ */
/* Receiving                                                                            */
/* ------------------------------------------------------------------------------------ */

/*
 * A receive error: the socket is closed first (the caller's view: it failed and is gone,
 * as a multicast router that missed upcalls cannot go on as if nothing happened), then
 * onError hears why.
 */
static void fail(polled_socket *s, int err, const char *syscall) {
  polled_socket_close(s);
  polled_socket_deliver_error(s, err, syscall);
}

static void deliver_message(polled_socket *s, size_t length) {
  napi_env env = s->env;
  napi_handle_scope scope;
  napi_value data;
  void *copy;
  if (napi_open_handle_scope(env, &scope) != napi_ok) {
    polled_socket_raise_or_stop(s, "napi_open_handle_scope");
    return;
  }
  /* A copy, not an external buffer: s->buffer is reused for the next datagram. */
  if (napi_create_buffer_copy(env, length, s->buffer, &copy, &data) == napi_ok)
    polled_socket_call(s, s->on_data, 1, &data);
  else
    polled_socket_raise_or_stop(s, "napi_create_buffer_copy");
  napi_close_handle_scope(env, scope);
}

/* Reads one datagram. True if one was delivered; false when the queue is empty or the
   socket failed (and is closed). */
static bool receive_message(polled_socket *s) {
  ssize_t n;
  do {
    n = recv(s->fd, s->buffer, RECEIVE_BUFFER_BYTES, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    fail(s, errno, "recv");
    return false;
  }
  deliver_message(s, (size_t)n);
  return true;
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  polled_socket *s = handle->data;
  if (s->fd < 0) return;
  if (status < 0) {
    /* libuv reports POLLERR as UV_EBADF and stops the handle: the socket's pending error,
       if it has one, says what really happened. */
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0) err = -status;
    fail(s, err, "poll");
    return;
  }
  /* onMessage may call close(), and JS may become unable to run: check before every read. */
  for (int i = 0; i < MESSAGES_PER_WAKEUP && s->fd >= 0 && !s->js_unavailable; i++) {
    if (!receive_message(s)) break;
  }
}

/* ------------------------------------------------------------------------------------ */
/* Methods of the socket object                                                         */
/* ------------------------------------------------------------------------------------ */

static napi_value js_set_option(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  double level = 0, option = 0;
  polled_socket *s = unwrap_this(env, info, &argc, argv);
  if (s == NULL) return NULL;
  if (argc < 3) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "setOption(level, option, value) needs three arguments");
    return NULL;
  }
  if (!read_integer(env, argv[0], 0, INT32_MAX, "level", &level) ||
      !read_integer(env, argv[1], 0, INT32_MAX, "option", &option))
    return NULL;

  int number = 0;
  const void *value = NULL;
  socklen_t length = 0;
  bool is_typedarray = false;
  NAPI_CALL(env, napi_is_typedarray(env, argv[2], &is_typedarray));
  if (is_typedarray) {
    napi_typedarray_type array_type;
    size_t size = 0;
    void *data = NULL;
    NAPI_CALL(env, napi_get_typedarray_info(env, argv[2], &array_type, &size, &data, NULL, NULL));
    if (array_type != napi_uint8_array) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "setOption(value): a Uint8Array or a number");
      return NULL;
    }
    /* An empty array has no data pointer: the kernel gets a valid one and length 0. */
    value = size == 0 ? (const void *)&number : data;
    length = (socklen_t)size;
  } else {
    double d = 0;
    if (!read_integer(env, argv[2], INT32_MIN, INT32_MAX, "setOption(value)", &d)) return NULL;
    number = (int)d;
    value = &number;
    length = sizeof number;
  }
  if (!polled_socket_check_open(env, s)) return NULL;
  if (setsockopt(s->fd, (int)level, (int)option, value, length) != 0) {
    throw_system_error(env, errno, "setsockopt", s->subject);
    return NULL;
  }
  return NULL;
}

static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  polled_socket *s = unwrap_this(env, info, &argc, argv);
  if (s == NULL) return NULL;
  return polled_socket_start(env, s, argc, argv, "start(onMessage, onError) needs two functions",
                             "RawSocket", on_poll);
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  polled_socket *s = unwrap_this(env, info, &argc, NULL);
  if (s == NULL) return NULL;
  int err = polled_socket_close(s);
  if (err != 0) throw_system_error(env, err, "close", s->subject);
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* open()                                                                               */
/* ------------------------------------------------------------------------------------ */

/* Reads options.receiveBufferBytes: 0 when absent (the kernel's default is kept). */
static bool read_receive_buffer(napi_env env, napi_value options, int *bytes) {
  napi_valuetype type;
  bool has = false;
  napi_value value;
  double number = 0;
  *bytes = 0;
  if (options == NULL) return true;
  if (napi_typeof(env, options, &type) != napi_ok) {
    throw_napi_failure(env, "napi_typeof");
    return false;
  }
  if (type == napi_undefined) return true;
  if (type != napi_object) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "options must be an object");
    return false;
  }
  if (napi_has_named_property(env, options, "receiveBufferBytes", &has) != napi_ok) {
    throw_napi_failure(env, "napi_has_named_property");
    return false;
  }
  if (!has) return true;
  if (napi_get_named_property(env, options, "receiveBufferBytes", &value) != napi_ok ||
      napi_typeof(env, value, &type) != napi_ok) {
    throw_napi_failure(env, "napi_get_named_property");
    return false;
  }
  if (type == napi_undefined) return true;
  if (!read_integer(env, value, 1, INT32_MAX, "options.receiveBufferBytes", &number)) return false;
  *bytes = (int)number;
  return true;
}

static napi_value js_open(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3] = {NULL, NULL, NULL};
  double family_number = 0, protocol = 0;
  int receive_buffer_bytes = 0;

  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "open(family, protocol, options) needs a family and a protocol");
    return NULL;
  }
  if (!read_integer(env, argv[0], 4, 6, "family", &family_number)) return NULL;
  if (family_number == 5) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "family must be 4 or 6");
    return NULL;
  }
  if (!read_integer(env, argv[1], 1, 255, "protocol", &protocol)) return NULL;
  if (!read_receive_buffer(env, argc >= 3 ? argv[2] : NULL, &receive_buffer_bytes)) return NULL;

  int family = family_number == 4 ? AF_INET : AF_INET6;
  const char *kind = family == AF_INET ? "raw IPv4 socket" : "raw IPv6 socket";
  const char *failed = NULL;
  int err = 0;
  polled_socket *s = NULL;

  int fd = socket(family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, (int)protocol);
  if (fd < 0) {
    throw_system_error(env, errno, "socket", kind);
    return NULL;
  }
  /* Past net.core.rmem_max where asked: a multicast router has CAP_NET_ADMIN anyway. */
  if (receive_buffer_bytes > 0 && (err = set_receive_buffer(fd, receive_buffer_bytes, &failed)) != 0)
    goto fail;

  s = polled_socket_new(sizeof *s, RECEIVE_BUFFER_BYTES, env, fd, "raw socket", kind);
  if (s == NULL) {
    err = ENOMEM;
    failed = "malloc";
    goto fail;
  }

  /* The JS object, built before the uv handle exists so that failures stay simple. */
  napi_value object, set_option_fn, start_fn, close_fn;
  if (napi_create_object(env, &object) != napi_ok ||
      napi_create_function(env, "setOption", NAPI_AUTO_LENGTH, js_set_option, NULL, &set_option_fn) != napi_ok ||
      napi_create_function(env, "start", NAPI_AUTO_LENGTH, js_start, NULL, &start_fn) != napi_ok ||
      napi_create_function(env, "close", NAPI_AUTO_LENGTH, js_close, NULL, &close_fn) != napi_ok) {
    throw_napi_failure(env, "creating the socket object");
    goto fail;
  }
  napi_property_descriptor properties[] = {
      {"setOption", NULL, NULL, NULL, NULL, set_option_fn, napi_default, NULL},
      {"start", NULL, NULL, NULL, NULL, start_fn, napi_default, NULL},
      {"close", NULL, NULL, NULL, NULL, close_fn, napi_default, NULL},
  };
  if (napi_define_properties(env, object, sizeof properties / sizeof properties[0], properties) !=
      napi_ok) {
    throw_napi_failure(env, "napi_define_properties");
    goto fail;
  }
  /* From here on the socket owns fd, also when this fails. */
  return polled_socket_attach(env, object, s);

fail:
  if (err != 0) throw_system_error(env, err, failed, kind); /* else one is pending */
  if (s != NULL) polled_socket_free(s);
  /* Not reported: the error being thrown already says what went wrong. */
  close(fd);
  return NULL;
}

napi_value raw_socket_exports(napi_env env) {
  napi_value exports, open_fn;
  NAPI_CALL(env, napi_create_object(env, &exports));
  NAPI_CALL(env, napi_create_function(env, "open", NAPI_AUTO_LENGTH, js_open, NULL, &open_fn));
  NAPI_CALL(env, napi_set_named_property(env, exports, "open", open_fn));
  return exports;
}
