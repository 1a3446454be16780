/**
 * A minimal classic pcap writer for tests, written from pcap-savefile(5) independently
 * of src/pcap: a 24-octet header (little-endian, microseconds) and 16-octet records.
 */
export function pcapFile(frames: readonly Uint8Array[], linkType = 1, startSec = 1_700_000_000): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(262144, 16);
  header.writeUInt32LE(linkType, 20);
  const parts: Buffer[] = [header];
  frames.forEach((frame, index) => {
    const record = Buffer.alloc(16);
    record.writeUInt32LE(startSec + index, 0);
    record.writeUInt32LE(500_000, 4);
    record.writeUInt32LE(frame.length, 8);
    record.writeUInt32LE(frame.length, 12);
    parts.push(record, Buffer.from(frame));
  });
  return Buffer.concat(parts);
}
