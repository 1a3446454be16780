/** The kernel's IPv4 multicast routing: struct codecs, /proc readers and the mroute socket. */
export * from './constants.js';
export * as vifctl from './vifctl.js';
export * as mfcctl from './mfcctl.js';
export * as igmpmsg from './igmpmsg.js';
export * as ipMreqn from './ip-mreqn.js';
export { kernelVifWidth, parseUpcall, type IgmpMsg, type Upcall, type VifWidth } from './igmpmsg.js';
export { parseMfcCache, parseVifTable, readMfcCache, readVifTable, type MfcOif, type MfcRow, type VifRow } from './proc.js';
export { MrouteError, MrouteSocket, ifindexOf, type AddMfcOptions, type AddVifOptions, type Membership, type MrouteOpenOptions, type SourceGroup } from '../../transport/mroute-socket.js';
