/*
 * polled_socket.h: a socket that libuv polls, owned by one JS object, with the life both
 * sockets of the addon share (packet_socket.c, raw_socket.c): open, start(onData, onError),
 * close() or the GC finalizer, and the memory freed only once libuv has finished closing
 * the poll handle AND the JS object was finalized, whichever comes last.
 *
 * A part puts a polled_socket first in its own state, so that one pointer is both: the one
 * napi_wrap wraps, unwrap_this returns and polled_socket_free frees.
 *
 * Every function that takes a napi_env runs on the JS thread: N-API entry points, the
 * libuv poll/close callbacks and the GC finalizer all run on the loop of that environment.
 */
#ifndef MCASTCTL_POLLED_SOCKET_H
#define MCASTCTL_POLLED_SOCKET_H

#include <node_api.h>
#include <uv.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct polled_socket {
  napi_env env;
  int fd;              /* -1 once closed */
  const char *name;    /* "packet socket", "raw socket": what its usage errors call it */
  const char *subject; /* ends the messages of its system errors: an interface, a kind */
  uint8_t *buffer;     /* the part's receive buffer, freed with the socket */

  /* Initialised by polled_socket_attach, active only between start() and close(). */
  uv_poll_t poll;
  bool started;
  bool handle_closed;
  bool wrapper_finalized;
  bool js_unavailable; /* the environment is shutting down: never call into JS again */

  napi_ref self; /* the JS object: strong while polling, so an active socket is not
                    collected (it keeps the loop alive, like a listening server) */
  napi_ref on_data;
  napi_ref on_error;
  napi_async_context async_context; /* async_hooks identity of the callbacks */
} polled_socket;

/*
 * Allocates a part's state of `size` bytes (zeroed; its polled_socket first) with a
 * receive buffer of `buffer_bytes`, for `fd`. NULL when memory is short.
 */
void *polled_socket_new(size_t size, size_t buffer_bytes, napi_env env, int fd, const char *name,
                        const char *subject);

/* Frees what polled_socket_new allocated, for a socket never attached (its fd stays open). */
void polled_socket_free(polled_socket *s);

/*
 * Makes `object` the socket's JS object: its poll handle is initialised (idle until
 * start()), `object` wraps it with the finalizer, and a weak reference keeps track of it
 * (an idle socket nobody references is collected and closed). Returns object; on failure
 * NULL with an exception pending, and the socket already torn down (its fd closed, its
 * memory freed now or by the finalizer): the caller must not touch it again.
 */
napi_value polled_socket_attach(napi_env env, napi_value object, polled_socket *s);

/*
 * Stops polling and closes the descriptor; the poll handle closes on the next loop turn.
 * Idempotent. Returns 0 or the errno of close() (Linux releases the descriptor either way).
 */
int polled_socket_close(polled_socket *s);

/*
 * The body of a socket's start(onData, onError) method, argv as the method got it: checks
 * them (`usage` is the TypeError's message), keeps both callbacks and an async context named
 * `resource`, polls for reading with `on_poll`, and makes the object reference strong.
 */
napi_value polled_socket_start(napi_env env, polled_socket *s, size_t argc, const napi_value *argv,
                               const char *usage, const char *resource, uv_poll_cb on_poll);

/* False, with ERR_SOCKET_CLOSED thrown, once the socket is closed. */
bool polled_socket_check_open(napi_env env, const polled_socket *s);

/* Stops polling while the descriptor is open (a handle that is closing is left alone). */
void polled_socket_stop(polled_socket *s);

/*
 * Calls a kept callback (on_data or on_error) the way Node calls its own I/O callbacks:
 * with the socket's async context and, via napi_make_callback, the nextTick and microtask
 * queues drained afterwards. Must run inside a handle scope.
 */
void polled_socket_call(polled_socket *s, napi_ref callback, size_t argc, const napi_value *argv);

/* Raises an uncaught exception naming `what`; if JS cannot run any more, stops polling instead
   (the finalizer, which runs at environment teardown, then closes the socket). */
void polled_socket_raise_or_stop(polled_socket *s, const char *what);

/* Passes a system error (errno `err` of `syscall`) to onError, in a handle scope of its own. */
void polled_socket_deliver_error(polled_socket *s, int err, const char *syscall);

/*
 * Sets fd's receive buffer to `bytes`: SO_RCVBUFFORCE, which is not capped at
 * net.core.rmem_max but needs CAP_NET_ADMIN, else SO_RCVBUF. Returns 0, or an errno with
 * *failed naming the call.
 */
int set_receive_buffer(int fd, int bytes, const char **failed);

#endif
