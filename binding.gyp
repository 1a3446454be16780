{
  # Native addons. packet_socket: live packet capture (AF_PACKET). Linux only: the project
  # runs on Open vSwitch nodes, and AF_PACKET, PACKET_STATISTICS and SO_TIMESTAMPNS are
  # Linux APIs. memory_trim: the C heap's free memory back to the system (malloc_trim).
  "targets": [
    {
      "target_name": "packet_socket",
      "sources": ["native/packet_socket.c"],
      # N-API (node_api.h) at a fixed version: the addon is ABI-stable across Node releases.
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags_c": ["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    },
    {
      "target_name": "memory_trim",
      "sources": ["native/memory_trim.c"],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags_c": ["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
