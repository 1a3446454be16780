/**
 * MAC addresses as the codecs and OVSDB carry them: six octets on the wire, and as text
 * six colon-separated pairs of hex digits ("0a:58:0a:01:00:02"), written in lower case.
 */

export const MAC_ADDRESS_LENGTH = 6;

/** The six octets of `text` (either case), or undefined when it is no MAC address. */
export function parseMac(text: string): Uint8Array | undefined {
  const parts = text.split(':');
  if (parts.length !== MAC_ADDRESS_LENGTH || parts.some((part) => !/^[0-9a-fA-F]{2}$/.test(part))) return undefined;
  return Uint8Array.from(parts, (part) => Number.parseInt(part, 16));
}

/** The text of six octets, in lower case. */
export function formatMac(octets: ArrayLike<number>): string {
  let text = '';
  for (let i = 0; i < MAC_ADDRESS_LENGTH; i++) text += (i ? ':' : '') + octets[i]!.toString(16).padStart(2, '0');
  return text;
}
