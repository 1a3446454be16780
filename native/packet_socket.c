/*
 * packet_socket.c: live packet capture on one Linux interface, for Node.js through N-API.
 *
 * Why AF_PACKET: a raw IPPROTO_IGMP socket only receives IGMP for groups this host has
 * joined, but `mcastctl snoop` must see every IGMP message crossing the interface, as
 * `tcpdump -i IF igmp` does. A packet socket sees every frame (in and out) of the device.
 *
 * JS surface, `packetSocket` of the addon (wrapped and typed by src/transport/packet-socket.ts):
 *
 *   open(ifname, { promiscuous, snaplen, receiveBufferBytes, filter }) -> socket
 *       filter: [[code, jt, jf, k], ...] (classic BPF), or a function called with the
 *       interface's ARPHRD type that returns such an array (or undefined for no filter):
 *       the right filter depends on the link type, which is only known once the socket
 *       has looked the interface up, and the filter must be attached before bind().
 *   socket.ifindex, socket.hardwareType (ARPHRD_*), socket.snaplen,
 *   socket.hardwareAddress ("aa:bb:cc:dd:ee:ff" for Ethernet-like devices, else "")
 *   socket.start(onFrame(data, tsSec, tsNsec, originalLength, packetType), onError(error))
 *   socket.stats() -> { packets, drops }   totals since open, with tcpdump's meaning:
 *                                          packets matched the filter (drops included)
 *   socket.send(frame, protocol) -> octets  one whole frame, link header included, out of
 *                                          the interface (as libpcap's pcap_inject);
 *                                          protocol: the ETH_P_* of its payload (0x0800),
 *                                          which links without a header (tun) need; this
 *                                          socket does not capture what it sends
 *   socket.close()                          idempotent; also done by the GC finalizer
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

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* tcpdump's MAXIMUM_SNAPLEN: large enough for a GRO-merged frame of a veth or loopback. */
#define MAX_SNAPLEN 262144u
/* Frames read per wakeup: bounded so that a flood cannot starve the rest of the event loop. */
#define FRAMES_PER_WAKEUP 64
/* BPF_MAXINSNS from linux/bpf_common.h: the kernel refuses longer classic programs. */
#define MAX_FILTER_INSTRUCTIONS 4096u

/* ------------------------------------------------------------------------------------ */
/* The capture object                                                                   */
/* ------------------------------------------------------------------------------------ */

typedef struct capture {
  polled_socket socket; /* first: its buffer holds snaplen bytes, one frame at a time */
  char ifname[IF_NAMESIZE];
  int ifindex;
  uint32_t snaplen;

  /* Totals of PACKET_STATISTICS: each getsockopt() read resets the kernel's counters. */
  uint64_t packets;
  uint64_t drops;
} capture;

/* Adds the kernel's counters since the last read to the totals. Returns 0 or an errno. */
static int collect_stats(capture *c) {
  struct tpacket_stats st;
  socklen_t len = sizeof st;
  if (c->socket.fd < 0) return 0;
  if (getsockopt(c->socket.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) return errno;
  /* For TPACKET_V1/V2 the kernel already counts drops in tp_packets: "received by the
     filter", as tcpdump reports it. */
  c->packets += st.tp_packets;
  c->drops += st.tp_drops;
  return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Receiving                                                                            */
/* ------------------------------------------------------------------------------------ */

static void on_poll(uv_poll_t *handle, int status, int events);

static void deliver_frame(capture *c, size_t captured, size_t original,
                          const struct timespec *ts, unsigned packet_type) {
  napi_env env = c->socket.env;
  napi_handle_scope scope;
  napi_value argv[5];
  void *copy;
  if (napi_open_handle_scope(env, &scope) != napi_ok) {
    polled_socket_raise_or_stop(&c->socket, "napi_open_handle_scope");
    return;
  }
  /* A copy, not an external buffer: c->socket.buffer is reused for the next frame. */
  if (napi_create_buffer_copy(env, captured, c->socket.buffer, &copy, &argv[0]) == napi_ok &&
      napi_create_int64(env, (int64_t)ts->tv_sec, &argv[1]) == napi_ok &&
      napi_create_int64(env, (int64_t)ts->tv_nsec, &argv[2]) == napi_ok &&
      napi_create_double(env, (double)original, &argv[3]) == napi_ok &&
      napi_create_uint32(env, packet_type, &argv[4]) == napi_ok) {
    polled_socket_call(&c->socket, c->socket.on_data, 5, argv);
  } else {
    polled_socket_raise_or_stop(&c->socket, "creating frame arguments");
  }
  napi_close_handle_scope(env, scope);
}

/*
 * Whether the device this socket is bound to still exists. When a device is deleted the
 * kernel reports only ENETDOWN (as for a link going down) and then silently unbinds the
 * socket: getsockname() shows ifindex -1 from then on. Two gaps remain, which only a
 * netlink (RTM_DELLINK) listener would close: a device deleted while already down sends
 * the socket nothing at all, and an error read in the short window between the kernel's
 * "down" and "unregister" steps of a deletion looks like a plain ENETDOWN.
 */
static bool device_still_bound(capture *c) {
  struct sockaddr_ll address;
  socklen_t len = sizeof address;
  memset(&address, 0, sizeof address);
  if (getsockname(c->socket.fd, (struct sockaddr *)&address, &len) != 0) return false;
  return address.sll_ifindex == c->ifindex;
}

/*
 * Reports a pending socket error, read by recvmsg() or SO_ERROR. Returns true if polling
 * should go on (the link may come back), false if this socket is done for.
 */
static bool report_socket_error(capture *c, int err, const char *syscall) {
  if (err == ENETDOWN && !device_still_bound(c)) {
    polled_socket_deliver_error(&c->socket, ENODEV, syscall);
    return false;
  }
  polled_socket_deliver_error(&c->socket, err, syscall);
  return true;
}

/*
 * Reads one frame. Returns true if one was delivered, false when the queue is empty or an
 * error was passed to onError (the caller then waits for the next wakeup).
 */
static bool receive_frame(capture *c) {
  struct sockaddr_ll from;
  struct iovec iov = {.iov_base = c->socket.buffer, .iov_len = c->snaplen};
  union {
    struct cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(struct timespec))];
  } control;
  struct msghdr msg = {
      .msg_name = &from,
      .msg_namelen = sizeof from,
      .msg_iov = &iov,
      .msg_iovlen = 1,
      .msg_control = control.bytes,
      .msg_controllen = sizeof control.bytes,
  };
  ssize_t n;

  memset(&from, 0, sizeof from);
  /* MSG_TRUNC: on a packet socket the return value is then the frame's full length, even
     when only snaplen bytes fit into the buffer. */
  do {
    n = recvmsg(c->socket.fd, &msg, MSG_TRUNC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    /* A pending socket error (ENETDOWN) is returned once, so this cannot busy-loop. */
    if (!report_socket_error(c, errno, "recvmsg")) polled_socket_stop(&c->socket);
    return false;
  }

  struct timespec ts;
  bool have_timestamp = false;
  for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_TIMESTAMPNS &&
        cmsg->cmsg_len >= CMSG_LEN(sizeof ts)) {
      memcpy(&ts, CMSG_DATA(cmsg), sizeof ts);
      have_timestamp = true;
    }
  }
  /* The kernel always attaches the timestamp once SO_TIMESTAMPNS is on; should it not,
     the receive time is the next best thing. CLOCK_REALTIME cannot fail with valid args. */
  if (!have_timestamp && clock_gettime(CLOCK_REALTIME, &ts) != 0) {
    ts.tv_sec = 0;
    ts.tv_nsec = 0;
  }

  size_t original = (size_t)n;
  size_t captured = original < c->snaplen ? original : c->snaplen;
  deliver_frame(c, captured, original, &ts, from.sll_pkttype);
  return true;
}

/*
 * libuv turns POLLERR into status UV_EBADF and stops the handle. For a packet socket
 * POLLERR means a pending socket error, set by the kernel when the link goes down
 * (ENETDOWN), also when the device is being deleted. Read it (which clears it), report
 * it, and poll again: frames flow again once the link is back up. A deleted device is
 * reported as ENODEV, and polling stays stopped: that socket will never see a frame again.
 */
static void handle_poll_error(capture *c, int status) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->socket.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    polled_socket_deliver_error(&c->socket, errno, "getsockopt(SO_ERROR)");
    return;
  }
  if (err == 0) {
    /* Not a socket error: polling again could spin on the same condition. Stay stopped. */
    polled_socket_deliver_error(&c->socket, -status, "uv_poll");
    return;
  }
  if (!report_socket_error(c, err, "poll")) return;
  /* onError may have closed the capture, or JS may be unable to run. */
  if (c->socket.fd >= 0 && !c->socket.js_unavailable) {
    int rc = uv_poll_start(&c->socket.poll, UV_READABLE, on_poll);
    if (rc != 0) polled_socket_deliver_error(&c->socket, -rc, "uv_poll_start");
  }
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  capture *c = handle->data;
  if (c->socket.fd < 0) return;
  if (status < 0) {
    handle_poll_error(c, status); /* status is a negated errno on Linux */
    return;
  }
  /* onFrame may call close(), and JS may become unable to run: check before every read.
     (An error may also have stopped polling; the frame read now is still delivered.) */
  for (int i = 0; i < FRAMES_PER_WAKEUP && c->socket.fd >= 0 && !c->socket.js_unavailable; i++) {
    if (!receive_frame(c)) break;
  }
}

/* ------------------------------------------------------------------------------------ */
/* Methods of the socket object                                                         */
/* ------------------------------------------------------------------------------------ */

static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  capture *c = unwrap_this(env, info, &argc, argv);
  if (c == NULL) return NULL;
  return polled_socket_start(env, &c->socket, argc, argv,
                             "start(onFrame, onError) needs two functions", "PacketSocket", on_poll);
}

static napi_value js_stats(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  capture *c = unwrap_this(env, info, &argc, NULL);
  if (c == NULL) return NULL;
  int err = collect_stats(c);
  if (err != 0) {
    throw_system_error(env, err, "getsockopt", c->ifname);
    return NULL;
  }
  napi_value result, packets, drops;
  NAPI_CALL(env, napi_create_object(env, &result));
  /* doubles are exact up to 2^53 frames */
  NAPI_CALL(env, napi_create_double(env, (double)c->packets, &packets));
  NAPI_CALL(env, napi_create_double(env, (double)c->drops, &drops));
  NAPI_CALL(env, napi_set_named_property(env, result, "packets", packets));
  NAPI_CALL(env, napi_set_named_property(env, result, "drops", drops));
  return result;
}

/*
 * Transmits one frame. The frame bypasses the IP stack (no routing, no source address
 * chosen by the kernel): that is what lets `mcastctl query` send from 0.0.0.0, as a
 * snooping bridge does, which an IP raw socket would overwrite with the route's source.
 */
static napi_value js_send(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  capture *c = unwrap_this(env, info, &argc, argv);
  if (c == NULL) return NULL;
  bool is_typedarray = false;
  if (argc < 2 || napi_is_typedarray(env, argv[0], &is_typedarray) != napi_ok || !is_typedarray) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "send(frame, protocol) needs a Uint8Array and a number");
    return NULL;
  }
  double protocol = 0;
  if (!read_integer(env, argv[1], 0, 0xffff, "protocol", &protocol)) return NULL;
  napi_typedarray_type array_type;
  size_t length = 0;
  void *data = NULL;
  NAPI_CALL(env, napi_get_typedarray_info(env, argv[0], &array_type, &length, &data, NULL, NULL));
  if (array_type != napi_uint8_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "send(frame) needs a Uint8Array");
    return NULL;
  }
  if (!polled_socket_check_open(env, &c->socket)) return NULL;
  /* The address names the payload's protocol: a device with a link header reads it from
     the frame, but one without (tun, wireguard) takes it from here, and drops the frame
     when it is missing. */
  struct sockaddr_ll address;
  memset(&address, 0, sizeof address);
  address.sll_family = AF_PACKET;
  address.sll_ifindex = c->ifindex;
  address.sll_protocol = htons((uint16_t)protocol);
  ssize_t sent = sendto(c->socket.fd, data, length, 0, (struct sockaddr *)&address, sizeof address);
  if (sent < 0) {
    throw_system_error(env, errno, "send", c->ifname);
    return NULL;
  }
  napi_value result;
  NAPI_CALL(env, napi_create_double(env, (double)sent, &result));
  return result;
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  capture *c = unwrap_this(env, info, &argc, NULL);
  if (c == NULL) return NULL;
  /* The last chance to read this socket's counters; it is closed either way (which also
     drops the PACKET_MR_PROMISC membership: the kernel undoes it with the socket). */
  const char *syscall = "getsockopt";
  int err = collect_stats(c);
  int closed = polled_socket_close(&c->socket);
  if (err == 0 && closed != 0) {
    err = closed;
    syscall = "close";
  }
  if (err != 0) throw_system_error(env, err, syscall, c->ifname);
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* open()                                                                               */
/* ------------------------------------------------------------------------------------ */

typedef struct open_options {
  bool promiscuous;
  uint32_t snaplen;
  int receive_buffer_bytes; /* 0: keep the kernel's default */
  napi_value filter;        /* NULL, an array, or a function of the ARPHRD type */
} open_options;

/* Looks up an optional property; *value is NULL when it is absent or undefined. */
static bool get_optional(napi_env env, napi_value object, const char *name, napi_value *value) {
  bool has = false;
  napi_valuetype type;
  *value = NULL;
  if (napi_has_named_property(env, object, name, &has) != napi_ok) {
    throw_napi_failure(env, "napi_has_named_property");
    return false;
  }
  if (!has) return true;
  if (napi_get_named_property(env, object, name, value) != napi_ok ||
      napi_typeof(env, *value, &type) != napi_ok) {
    throw_napi_failure(env, "napi_get_named_property");
    return false;
  }
  if (type == napi_undefined) *value = NULL;
  return true;
}

static bool read_options(napi_env env, napi_value object, open_options *out) {
  napi_value value;
  napi_valuetype type;
  double number;

  out->promiscuous = true; /* like tcpdump: a NIC may filter multicast we have not joined */
  out->snaplen = MAX_SNAPLEN;
  out->receive_buffer_bytes = 0;
  out->filter = NULL;
  if (object == NULL) return true;
  if (napi_typeof(env, object, &type) != napi_ok) {
    throw_napi_failure(env, "napi_typeof");
    return false;
  }
  if (type == napi_undefined) return true;
  if (type != napi_object) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "options must be an object");
    return false;
  }

  if (!get_optional(env, object, "promiscuous", &value)) return false;
  if (value != NULL) {
    if (napi_get_value_bool(env, value, &out->promiscuous) != napi_ok) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "options.promiscuous must be a boolean");
      return false;
    }
  }
  if (!get_optional(env, object, "snaplen", &value)) return false;
  if (value != NULL) {
    if (!read_integer(env, value, 1, MAX_SNAPLEN, "options.snaplen", &number)) return false;
    out->snaplen = (uint32_t)number;
  }
  if (!get_optional(env, object, "receiveBufferBytes", &value)) return false;
  if (value != NULL) {
    if (!read_integer(env, value, 1, INT32_MAX, "options.receiveBufferBytes", &number)) return false;
    out->receive_buffer_bytes = (int)number;
  }
  if (!get_optional(env, object, "filter", &value)) return false;
  if (value != NULL) {
    if (napi_typeof(env, value, &type) != napi_ok) {
      throw_napi_failure(env, "napi_typeof");
      return false;
    }
    bool is_array = false;
    if (type != napi_function &&
        (napi_is_array(env, value, &is_array) != napi_ok || !is_array)) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                            "options.filter must be an array of [code, jt, jf, k] or a function");
      return false;
    }
    out->filter = value;
  }
  return true;
}

/*
 * Converts [[code, jt, jf, k], ...] into a kernel program. Returns a calloc'd array of
 * *count instructions, or NULL with an exception pending. The kernel checks the program
 * itself (jumps in range, ends in a return) when it is attached.
 */
static struct sock_filter *read_filter(napi_env env, napi_value array, uint32_t *count) {
  bool is_array = false;
  uint32_t length = 0;
  if (napi_is_array(env, array, &is_array) != napi_ok || !is_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "a BPF filter must be an array");
    return NULL;
  }
  NAPI_CALL(env, napi_get_array_length(env, array, &length));
  if (length == 0 || length > MAX_FILTER_INSTRUCTIONS) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "a BPF filter needs 1 to 4096 instructions");
    return NULL;
  }
  struct sock_filter *program = calloc(length, sizeof *program);
  if (program == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory for the BPF filter");
    return NULL;
  }
  for (uint32_t i = 0; i < length; i++) {
    napi_value insn, field;
    uint32_t fields = 0;
    double code, jt, jf, k;
    if (napi_get_element(env, array, i, &insn) != napi_ok ||
        napi_is_array(env, insn, &is_array) != napi_ok) {
      throw_napi_failure(env, "napi_get_element");
      goto fail;
    }
    if (!is_array || napi_get_array_length(env, insn, &fields) != napi_ok || fields != 4) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                            "each BPF instruction must be an array [code, jt, jf, k]");
      goto fail;
    }
    if (napi_get_element(env, insn, 0, &field) != napi_ok ||
        !read_integer(env, field, 0, 0xFFFF, "BPF code", &code) ||
        napi_get_element(env, insn, 1, &field) != napi_ok ||
        !read_integer(env, field, 0, 0xFF, "BPF jt", &jt) ||
        napi_get_element(env, insn, 2, &field) != napi_ok ||
        !read_integer(env, field, 0, 0xFF, "BPF jf", &jf) ||
        napi_get_element(env, insn, 3, &field) != napi_ok ||
        /* k is 32 bits: accept both the signed and the unsigned spelling */
        !read_integer(env, field, -2147483648.0, 4294967295.0, "BPF k", &k)) {
      throw_napi_failure(env, "napi_get_element"); /* no-op if read_integer threw */
      goto fail;
    }
    program[i].code = (uint16_t)code;
    program[i].jt = (uint8_t)jt;
    program[i].jf = (uint8_t)jf;
    program[i].k = (uint32_t)(int64_t)k;
  }
  *count = length;
  return program;
fail:
  free(program);
  return NULL;
}

/* Resolves options.filter (array or function of the ARPHRD type) into a program, or NULL
   for none. Returns false with an exception pending on error. */
static bool resolve_filter(napi_env env, napi_value filter, int hardware_type,
                           struct sock_filter **program, uint32_t *count) {
  napi_valuetype type;
  napi_value array = filter;
  *program = NULL;
  *count = 0;
  if (filter == NULL) return true;
  if (napi_typeof(env, filter, &type) != napi_ok) {
    throw_napi_failure(env, "napi_typeof");
    return false;
  }
  if (type == napi_function) {
    napi_value global, argument;
    if (napi_get_global(env, &global) != napi_ok ||
        napi_create_int32(env, hardware_type, &argument) != napi_ok) {
      throw_napi_failure(env, "napi_get_global");
      return false;
    }
    /* If it throws (say, an unsupported link type), that exception is open()'s. */
    if (napi_call_function(env, global, filter, 1, &argument, &array) != napi_ok) {
      throw_napi_failure(env, "calling options.filter");
      return false;
    }
    if (napi_typeof(env, array, &type) != napi_ok) {
      throw_napi_failure(env, "napi_typeof");
      return false;
    }
    if (type == napi_undefined) return true;
  }
  *program = read_filter(env, array, count);
  return *program != NULL;
}

static napi_value js_open(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2] = {NULL, NULL};
  napi_valuetype type;
  char ifname[IF_NAMESIZE];
  size_t ifname_length = 0;
  open_options options;

  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_string) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "open(ifname, options): ifname must be a string");
    return NULL;
  }
  /* Read one byte more than fits, to detect (rather than silently cut) a long name. */
  char name_buffer[IF_NAMESIZE + 1];
  NAPI_CALL(env, napi_get_value_string_utf8(env, argv[0], name_buffer, sizeof name_buffer,
                                            &ifname_length));
  if (ifname_length == 0 || ifname_length >= IF_NAMESIZE || strlen(name_buffer) != ifname_length) {
    napi_throw_range_error(env, "ERR_INVALID_ARG_VALUE",
                           "an interface name has 1 to 15 bytes and no NUL");
    return NULL;
  }
  memcpy(ifname, name_buffer, ifname_length + 1);
  if (!read_options(env, argc >= 2 ? argv[1] : NULL, &options)) return NULL;

  int err = 0;
  const char *failed = NULL;
  struct sock_filter *program = NULL;
  uint32_t program_length = 0;
  capture *c = NULL;

  /*
   * Protocol 0, not htons(ETH_P_ALL): a packet socket created with a protocol starts
   * queueing frames of EVERY interface at once, before bind() narrows it to one device
   * and before the filter is attached, and those frames stay queued. With protocol 0
   * the kernel delivers nothing until bind() names both the protocol and the device, so
   * the filter is in place before the first frame arrives (no drain needed).
   */
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw_system_error(env, errno, "socket", ifname);
    return NULL;
  }

  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, ifname, ifname_length + 1);
  if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
    err = errno;
    failed = "ioctl(SIOCGIFINDEX)";
    goto fail;
  }
  int ifindex = ifr.ifr_ifindex;

  /* The ARPHRD type says which link header the frames carry (see the TS wrapper). */
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, ifname, ifname_length + 1);
  if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
    err = errno;
    failed = "ioctl(SIOCGIFHWADDR)";
    goto fail;
  }
  int hardware_type = ifr.ifr_hwaddr.sa_family;
  char hardware_address[18] = "";
  if (hardware_type == ARPHRD_ETHER || hardware_type == ARPHRD_LOOPBACK) {
    const unsigned char *mac = (const unsigned char *)ifr.ifr_hwaddr.sa_data;
    snprintf(hardware_address, sizeof hardware_address, "%02x:%02x:%02x:%02x:%02x:%02x",
             mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  }

  if (!resolve_filter(env, options.filter, hardware_type, &program, &program_length)) goto fail;
  if (program != NULL) {
    struct sock_fprog fprog = {.len = (unsigned short)program_length, .filter = program};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) != 0) {
      err = errno;
      failed = "setsockopt(SO_ATTACH_FILTER)";
      goto fail;
    }
  }

  int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) {
    err = errno;
    failed = "setsockopt(SO_TIMESTAMPNS)";
    goto fail;
  }

  /* Past net.core.rmem_max where the capability allows: a capture is worthless once it drops. */
  if (options.receive_buffer_bytes > 0 &&
      (err = set_receive_buffer(fd, options.receive_buffer_bytes, &failed)) != 0)
    goto fail;

  struct sockaddr_ll address;
  memset(&address, 0, sizeof address);
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = ifindex;
  if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    err = errno;
    failed = "bind";
    goto fail;
  }

  if (options.promiscuous) {
    /* A membership, not SIOCSIFFLAGS: the kernel counts it and drops it with the socket,
       so a crash cannot leave the interface promiscuous. */
    struct packet_mreq mreq;
    memset(&mreq, 0, sizeof mreq);
    mreq.mr_ifindex = ifindex;
    mreq.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) {
      err = errno;
      failed = "setsockopt(PACKET_ADD_MEMBERSHIP)";
      goto fail;
    }
  }

  free(program);
  program = NULL;

  c = polled_socket_new(sizeof *c, options.snaplen, env, fd, "packet socket", NULL);
  if (c == NULL) {
    err = ENOMEM;
    failed = "malloc";
    goto fail;
  }
  c->socket.subject = c->ifname; /* its errors end with the interface's name */
  c->ifindex = ifindex;
  c->snaplen = options.snaplen;
  memcpy(c->ifname, ifname, ifname_length + 1);

  /* The JS object, built before the uv handle exists so that failures stay simple. */
  napi_value object, ifindex_value, type_value, snaplen_value, address_value;
  napi_value start_fn, stats_fn, send_fn, close_fn;
  if (napi_create_object(env, &object) != napi_ok ||
      napi_create_int32(env, ifindex, &ifindex_value) != napi_ok ||
      napi_create_int32(env, hardware_type, &type_value) != napi_ok ||
      napi_create_uint32(env, options.snaplen, &snaplen_value) != napi_ok ||
      napi_create_string_utf8(env, hardware_address, NAPI_AUTO_LENGTH, &address_value) != napi_ok ||
      napi_create_function(env, "start", NAPI_AUTO_LENGTH, js_start, NULL, &start_fn) != napi_ok ||
      napi_create_function(env, "stats", NAPI_AUTO_LENGTH, js_stats, NULL, &stats_fn) != napi_ok ||
      napi_create_function(env, "send", NAPI_AUTO_LENGTH, js_send, NULL, &send_fn) != napi_ok ||
      napi_create_function(env, "close", NAPI_AUTO_LENGTH, js_close, NULL, &close_fn) != napi_ok) {
    throw_napi_failure(env, "creating the socket object");
    goto fail;
  }
  napi_property_descriptor properties[] = {
      {"ifindex", NULL, NULL, NULL, NULL, ifindex_value, napi_enumerable, NULL},
      {"hardwareType", NULL, NULL, NULL, NULL, type_value, napi_enumerable, NULL},
      {"snaplen", NULL, NULL, NULL, NULL, snaplen_value, napi_enumerable, NULL},
      {"hardwareAddress", NULL, NULL, NULL, NULL, address_value, napi_enumerable, NULL},
      {"start", NULL, NULL, NULL, NULL, start_fn, napi_default, NULL},
      {"stats", NULL, NULL, NULL, NULL, stats_fn, napi_default, NULL},
      {"send", NULL, NULL, NULL, NULL, send_fn, napi_default, NULL},
      {"close", NULL, NULL, NULL, NULL, close_fn, napi_default, NULL},
  };
  if (napi_define_properties(env, object, sizeof properties / sizeof properties[0], properties) !=
      napi_ok) {
    throw_napi_failure(env, "napi_define_properties");
    goto fail;
  }

  /* From here on the socket owns fd, also when this fails. */
  return polled_socket_attach(env, object, &c->socket);

fail:
  if (err != 0) throw_system_error(env, err, failed, ifname); /* else one is pending */
  free(program);
  if (c != NULL) polled_socket_free(&c->socket);
  /* A failure here is not reported: the error being thrown already says what went wrong,
     and Linux frees the descriptor even when close() fails. */
  close(fd);
  return NULL;
}

napi_value packet_socket_exports(napi_env env) {
  napi_value exports, open_fn;
  NAPI_CALL(env, napi_create_object(env, &exports));
  NAPI_CALL(env, napi_create_function(env, "open", NAPI_AUTO_LENGTH, js_open, NULL, &open_fn));
  NAPI_CALL(env, napi_set_named_property(env, exports, "open", open_fn));
  return exports;
}
