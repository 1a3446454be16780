/* polled_socket.c: see polled_socket.h. */
#include "polled_socket.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "node_errors.h"

void *polled_socket_new(size_t size, size_t buffer_bytes, napi_env env, int fd, const char *name,
                        const char *subject) {
  polled_socket *s = calloc(1, size);
  if (s == NULL) return NULL;
  if ((s->buffer = malloc(buffer_bytes)) == NULL) {
    free(s);
    return NULL;
  }
  s->env = env;
  s->fd = fd;
  s->name = name;
  s->subject = subject;
  return s;
}

void polled_socket_free(polled_socket *s) {
  free(s->buffer);
  free(s);
}

static void free_if_unused(polled_socket *s) {
  if (s->handle_closed && s->wrapper_finalized) polled_socket_free(s);
}

/* Drops the references that keep JS values alive. Safe to call more than once. */
static void release_js_state(napi_env env, polled_socket *s) {
  if (s->on_data != NULL && napi_delete_reference(env, s->on_data) == napi_ok) s->on_data = NULL;
  if (s->on_error != NULL && napi_delete_reference(env, s->on_error) == napi_ok) s->on_error = NULL;
  if (s->async_context != NULL && napi_async_destroy(env, s->async_context) == napi_ok)
    s->async_context = NULL;
  if (s->self != NULL && napi_delete_reference(env, s->self) == napi_ok) s->self = NULL;
}

static void on_handle_closed(uv_handle_t *handle) {
  polled_socket *s = handle->data;
  s->handle_closed = true;
  if (!s->wrapper_finalized) {
    /* Done here, a loop turn after close(), rather than in close() itself: close() may be
       called from inside a callback, while napi_make_callback still uses the async context. */
    napi_handle_scope scope;
    if (napi_open_handle_scope(s->env, &scope) == napi_ok) {
      release_js_state(s->env, s);
      napi_close_handle_scope(s->env, scope);
    }
  }
  free_if_unused(s);
}

int polled_socket_close(polled_socket *s) {
  int result = 0;
  if (s->fd < 0) return 0;
  /* libuv wants the poll stopped before its fd is closed; uv_close() stops it too, and
     an inactive closing handle no longer keeps the loop alive. */
  if (s->started) uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, on_handle_closed);
  /* Linux releases the descriptor even when close() fails (also on EINTR): never retry. */
  if (close(s->fd) != 0 && errno != EINTR) result = errno;
  s->fd = -1;
  return result;
}

/* GC finalizer of the JS object, also run when the environment is torn down. */
static void finalize(napi_env env, void *data, void *hint) {
  polled_socket *s = data;
  s->wrapper_finalized = true;
  polled_socket_close(s); /* nobody is left to hear about an error here */
  release_js_state(env, s);
  free_if_unused(s);
}

/* A socket whose poll handle never existed: closed and freed at once, an exception pending. */
static napi_value discard_unattached(polled_socket *s) {
  /* Not reported: the error being thrown already says what went wrong. */
  close(s->fd);
  polled_socket_free(s);
  return NULL;
}

napi_value polled_socket_attach(napi_env env, napi_value object, polled_socket *s) {
  uv_loop_t *loop = NULL;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
    throw_napi_failure(env, "napi_get_uv_event_loop");
    return discard_unattached(s);
  }
  int rc = uv_poll_init(loop, &s->poll, s->fd);
  if (rc != 0) {
    throw_system_error(env, -rc, "uv_poll_init", s->subject);
    return discard_unattached(s);
  }
  s->poll.data = s;

  /* From here on the handle exists: failures go through the normal teardown. */
  if (napi_wrap(env, object, s, finalize, NULL, NULL) != napi_ok) {
    throw_napi_failure(env, "napi_wrap");
    s->wrapper_finalized = true; /* there will be no finalizer */
    polled_socket_close(s);      /* closes fd; frees s from the close callback */
    return NULL;
  }
  /* Weak until start(): an idle socket nobody references is collected and closed. */
  if (napi_create_reference(env, object, 0, &s->self) != napi_ok) {
    throw_napi_failure(env, "napi_create_reference");
    polled_socket_close(s); /* the finalizer frees s later */
    return NULL;
  }
  return object;
}

bool polled_socket_check_open(napi_env env, const polled_socket *s) {
  if (s->fd >= 0) return true;
  char message[64];
  snprintf(message, sizeof message, "the %s is closed", s->name);
  napi_throw_error(env, "ERR_SOCKET_CLOSED", message);
  return false;
}

napi_value polled_socket_start(napi_env env, polled_socket *s, size_t argc, const napi_value *argv,
                               const char *usage, const char *resource, uv_poll_cb on_poll) {
  napi_valuetype types[2];
  napi_value resource_name, self;
  if (argc < 2) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", usage);
    return NULL;
  }
  NAPI_CALL(env, napi_typeof(env, argv[0], &types[0]));
  NAPI_CALL(env, napi_typeof(env, argv[1], &types[1]));
  if (types[0] != napi_function || types[1] != napi_function) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", usage);
    return NULL;
  }
  if (!polled_socket_check_open(env, s)) return NULL;
  if (s->started || s->on_data != NULL) {
    char message[64];
    snprintf(message, sizeof message, "the %s is already started", s->name);
    napi_throw_error(env, "ERR_SOCKET_ALREADY_STARTED", message);
    return NULL;
  }

  NAPI_CALL(env, napi_create_reference(env, argv[0], 1, &s->on_data));
  NAPI_CALL(env, napi_create_reference(env, argv[1], 1, &s->on_error));
  NAPI_CALL(env, napi_get_reference_value(env, s->self, &self));
  NAPI_CALL(env, napi_create_string_utf8(env, resource, NAPI_AUTO_LENGTH, &resource_name));
  NAPI_CALL(env, napi_async_init(env, self, resource_name, &s->async_context));

  int rc = uv_poll_start(&s->poll, UV_READABLE, on_poll);
  if (rc != 0) {
    throw_system_error(env, -rc, "uv_poll_start", s->subject);
    return NULL;
  }
  s->started = true;
  /* Polling keeps the process alive; the object must then outlive its last JS reference. */
  uint32_t count;
  NAPI_CALL(env, napi_reference_ref(env, s->self, &count));
  return NULL;
}

void polled_socket_stop(polled_socket *s) {
  if (s->fd >= 0) uv_poll_stop(&s->poll);
}

void polled_socket_raise_or_stop(polled_socket *s, const char *what) {
  if (!raise_uncaught(s->env, what)) {
    s->js_unavailable = true;
    polled_socket_stop(s);
  }
}

void polled_socket_call(polled_socket *s, napi_ref callback_ref, size_t argc,
                        const napi_value *argv) {
  napi_env env = s->env;
  napi_value callback = NULL, self = NULL, result;
  if (callback_ref == NULL || s->self == NULL || s->js_unavailable) return;
  if (napi_get_reference_value(env, callback_ref, &callback) != napi_ok ||
      napi_get_reference_value(env, s->self, &self) != napi_ok) {
    polled_socket_raise_or_stop(s, "napi_get_reference_value");
    return;
  }
  if (callback == NULL || self == NULL) return; /* cannot happen while the refs are strong */
  if (napi_make_callback(env, s->async_context, self, callback, argc, argv, &result) != napi_ok)
    polled_socket_raise_or_stop(s, "napi_make_callback");
}

void polled_socket_deliver_error(polled_socket *s, int err, const char *syscall) {
  napi_env env = s->env;
  napi_handle_scope scope;
  if (s->js_unavailable) return;
  if (napi_open_handle_scope(env, &scope) != napi_ok) {
    polled_socket_raise_or_stop(s, "napi_open_handle_scope");
    return;
  }
  napi_value error = make_system_error(env, err, syscall, s->subject);
  if (error == NULL)
    polled_socket_raise_or_stop(s, "make_system_error");
  else
    polled_socket_call(s, s->on_error, 1, &error);
  napi_close_handle_scope(env, scope);
}

int set_receive_buffer(int fd, int bytes, const char **failed) {
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) == 0) return 0;
  if (errno != EPERM) {
    *failed = "setsockopt(SO_RCVBUFFORCE)";
    return errno;
  }
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) == 0) return 0;
  *failed = "setsockopt(SO_RCVBUF)";
  return errno;
}
