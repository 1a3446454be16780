import type net from 'node:net';

/** Closes `server` (if there is one), resolving once it no longer listens. */
export const closeServer = (server: net.Server | undefined) =>
  new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
