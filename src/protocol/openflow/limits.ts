/**
 * How much fits in one message, measured against Open vSwitch 3.1.
 *
 * An OpenFlow message is at most 65535 octets (its length field is 16 bits). A GROUP_MOD
 * is 16 octets of header and fixed fields, then its buckets; a bucket is 16 octets plus
 * its actions, and an OUTPUT action is 16. So one message holds
 * floor((65535 - 16) / 32) = 2047 buckets of one OUTPUT each (65520 octets); 2048 need
 * 65552 and cannot be encoded.
 *
 * How it was found: test/e2e/openflow-client.test.ts sends an ALL group of 2047
 * single-OUTPUT buckets to a real ovs-vswitchd (3.1, user-space datapath); OVS accepts it
 * (no OUT_OF_BUCKETS: OVS sets no bucket limit of its own below what the message can
 * carry), `ovs-ofctl dump-groups` shows all 2047 buckets, and the GROUP_DESC reply comes
 * one group per multipart part (each part carries the MORE flag but the last). A group
 * with more members must be split: OpenFlow 1.3 has no insert-bucket command, so the
 * pipeline chains groups (a bucket whose action is GROUP to the next one).
 */
import { output, setTunnelDestination } from './action.js';
import { BUCKET_HEADER_LENGTH, bucket, bucketLength } from './bucket.js';
import { GROUP_MOD_FIXED_LENGTH } from './group-mod.js';
import { MAX_MESSAGE_LENGTH } from './header.js';

/** Octets of an OUTPUT action. */
const OUTPUT_ACTION_LENGTH = 16;

/** Buckets of `bucketLength` octets (16 + its actions) that one GROUP_MOD can carry. */
export function maxBucketsPerGroupMod(bucketLength: number): number {
  if (!Number.isInteger(bucketLength) || bucketLength < BUCKET_HEADER_LENGTH || bucketLength % 8 !== 0) {
    throw new RangeError(`bucket length ${bucketLength} is not a multiple of 8 of at least ${BUCKET_HEADER_LENGTH}`);
  }
  return Math.floor((MAX_MESSAGE_LENGTH - GROUP_MOD_FIXED_LENGTH) / bucketLength);
}

/** 2047: the most ALL-group buckets of one OUTPUT action each that one GROUP_MOD carries, and OVS 3.1 accepts. */
export const MAX_OUTPUT_BUCKETS_PER_GROUP_MOD = maxBucketsPerGroupMod(BUCKET_HEADER_LENGTH + OUTPUT_ACTION_LENGTH);

/**
 * 48: the octets of one tunnel bucket, `set_field:PEER->tun_dst,output:TUN` (bucket header
 * 16 + SET_FIELD 16 + OUTPUT 16). Taken from the codec itself so that it cannot drift from
 * what is sent. It is half again a one-OUTPUT bucket (32), so one GROUP_MOD carries at most
 * maxBucketsPerGroupMod(TUNNEL_BUCKET_LENGTH) = 1364 tunnel buckets, not 2047.
 */
export const TUNNEL_BUCKET_LENGTH = bucketLength(bucket([setTunnelDestination('0.0.0.0'), output(0)]));
