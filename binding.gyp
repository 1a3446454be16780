{
  # mcastctl's one native addon, `mcastctl_native` (native/addon.c puts its parts
  # together): packet_socket.c, live packet capture (AF_PACKET); raw_socket.c, the raw IP
  # sockets of kernel multicast routing, both living as a polled_socket.c (polled by libuv,
  # owned by a JS object); memory_trim.c, V8's heap and the C heap's free memory back
  # to the system (LowMemoryNotification, malloc_trim). Linux only: the project runs on
  # Open vSwitch nodes, and AF_PACKET, PACKET_STATISTICS, SO_TIMESTAMPNS and the MRT
  # options are Linux APIs.
  # `npm run build` makes the prebuilt copy the package ships (prebuilds/, prebuildify);
  # the package's install script builds this file only where no prebuilt copy fits.
  "targets": [
    {
      "target_name": "mcastctl_native",
      "sources": ["native/addon.c", "native/node_errors.c", "native/napi_args.c", "native/polled_socket.c", "native/packet_socket.c", "native/raw_socket.c", "native/memory_trim.c"],
      # N-API (node_api.h) at a fixed version: the addon is ABI-stable across Node releases.
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      # Hidden: only the module's registration is the addon's interface to Node.
      "cflags_c": ["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"]
    }
  ]
}
