/**
 * Classic libpcap capture files: header codecs, a streaming reader, a writer, and the
 * link-type table. pcapng is refused with a hint to convert it.
 */
export * from './format.js';
export { pcapFileHeader, decodeMagic, type PcapMagic } from './file-header.js';
export { pcapRecordHeader } from './record-header.js';
export {
  LinkType,
  linkTypeName,
  linkTypeValue,
  describeLinkType,
  supportedLinkType,
  type LinkTypeName,
} from './link-type.js';
export { PcapReader, type PcapRecord, type PcapRecordHandler, type PcapReaderOptions } from './reader.js';
export {
  readPcapFile,
  readPcapStream,
  PCAP_READ_CHUNK_SIZE,
  type ReadPcapOptions,
  type PcapReadSummary,
} from './read-file.js';
export { PcapWriter, type PcapWriterOptions, type PcapWriteRecord } from './writer.js';
