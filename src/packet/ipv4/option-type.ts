/** IPv4 option type octets (IANA "IP Option Numbers"): copy flag, class and number together. */
export const IpOptionType = {
  EndOfList: 0,
  NoOperation: 1,
  /** RFC 2113; 0x94 = copied, class 0, number 20. */
  RouterAlert: 0x94,
} as const;
