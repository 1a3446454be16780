/**
 * The 8-octet link-layer address field both cooked headers share. Only the first
 * `addressLength` octets mean anything (at most 8: longer addresses are cut, shorter
 * ones padded), so that is what decoders return; encoders pad with zeros.
 */

export const SLL_ADDRESS_FIELD_LENGTH = 8;

export function readAddress(bytes: Uint8Array, offset: number, addressLength: number): Uint8Array {
  return bytes.subarray(offset, offset + Math.min(addressLength, SLL_ADDRESS_FIELD_LENGTH));
}

export function writeAddress(bytes: Uint8Array, offset: number, address: Uint8Array): void {
  if (address.length > SLL_ADDRESS_FIELD_LENGTH) {
    throw new RangeError(`link-layer address of ${address.length} octets; the field holds ${SLL_ADDRESS_FIELD_LENGTH}`);
  }
  bytes.set(address, offset);
  bytes.fill(0, offset + address.length, offset + SLL_ADDRESS_FIELD_LENGTH);
}
