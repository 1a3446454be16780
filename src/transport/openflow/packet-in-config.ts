/**
 * Asking a switch for packet-ins.
 *
 * What Open vSwitch needs (ofproto/connmgr.c and ofproto.c, checked against a real
 * switch in test/e2e/openflow-client.test.ts): a service connection (`<bridge>.mgmt`)
 * starts with miss_send_len 0, and while it is 0 it gets no asynchronous message at all,
 * whatever its async configuration says. SET_CONFIG with a nonzero miss_send_len opens
 * it; so does SET_ASYNC, which OVS treats as a request for asynchronous messages and
 * answers by raising miss_send_len to 128 on its own. OVS's default async configuration
 * for 1.3 already enables NO_MATCH and ACTION packet-ins for the (default) EQUAL role, and
 * its default packet-in format is the standard OFPT_PACKET_IN: no role request and no
 * NXT_SET_PACKET_IN_FORMAT are needed. This sends SET_ASYNC with the reasons asked for
 * (the other masks as GET_ASYNC reports them), then SET_CONFIG with `missSendLen`, so the
 * result is the same on any switch.
 */
import { PacketInReason, reasonMask } from '../../protocol/openflow/async-reason.js';
import type { BatchSender } from './batch.js';

export interface PacketInOptions {
  /** miss_send_len: octets of a table-miss packet to send (default 0xffff: all of it, unbuffered). */
  missSendLen?: number;
  /** PacketInReason values to receive (default NO_MATCH and ACTION). */
  reasons?: number[];
}

export function packetInConfig(options: PacketInOptions): Required<PacketInOptions> {
  return {
    missSendLen: options.missSendLen ?? 0xffff,
    reasons: options.reasons ?? [PacketInReason.NO_MATCH, PacketInReason.ACTION],
  };
}

/** Rejects with the switch's OpenFlowError when it refuses SET_ASYNC or SET_CONFIG. */
export async function configurePacketIn(batches: BatchSender, config: Required<PacketInOptions>): Promise<void> {
  const { requests } = batches;
  const current = await requests.transact({ type: 'GET_ASYNC_REQUEST', xid: 0 });
  const switchConfig = await requests.transact({ type: 'GET_CONFIG_REQUEST', xid: 0 });
  const { errors } = await batches.send([
    {
      type: 'SET_ASYNC',
      xid: 0,
      packetIn: [reasonMask(config.reasons), current.packetIn[1]],
      portStatus: current.portStatus,
      flowRemoved: current.flowRemoved,
    },
    { type: 'SET_CONFIG', xid: 0, flags: switchConfig.flags, missSendLen: config.missSendLen },
  ]);
  const error = errors.get(0) ?? errors.get(1);
  if (error) throw error;
}
