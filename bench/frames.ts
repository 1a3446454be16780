/** Frames for benchmarks, built with the project's own encoders (speed, not correctness, is measured here). */
import * as ethernet from '../src/packet/ethernet.js';
import * as ipv4 from '../src/packet/ipv4/header.js';
import { ROUTER_ALERT } from '../src/packet/ipv4/header.js';

export function buildFrame(igmpMessage: Uint8Array, dst: string, src = '10.0.0.2'): Buffer {
  const header = { dst: ethernet.multicastMacForGroup(dst), src: '02:00:00:00:00:02', vlanIds: [], etherType: 0x0800 };
  const ip = {
    tos: 0xc0,
    totalLength: 24 + igmpMessage.length,
    identification: 0,
    dontFragment: true,
    moreFragments: false,
    fragmentOffset: 0,
    ttl: 1,
    protocol: 2,
    src,
    dst,
    options: [ROUTER_ALERT],
  };
  return Buffer.concat([ethernet.encode(header), ipv4.encode(ip), igmpMessage]);
}
