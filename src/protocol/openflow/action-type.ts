/** Action and instruction type numbers of OpenFlow 1.3 (§7.2.5 `ofp_action_type`, §7.2.4 `ofp_instruction_type`). */

export const OfpActionType = {
  OUTPUT: 0,
  COPY_TTL_OUT: 11,
  COPY_TTL_IN: 12,
  SET_MPLS_TTL: 15,
  DEC_MPLS_TTL: 16,
  PUSH_VLAN: 17,
  POP_VLAN: 18,
  PUSH_MPLS: 19,
  POP_MPLS: 20,
  SET_QUEUE: 21,
  GROUP: 22,
  SET_NW_TTL: 23,
  DEC_NW_TTL: 24,
  SET_FIELD: 25,
  PUSH_PBB: 26,
  POP_PBB: 27,
  EXPERIMENTER: 0xffff,
} as const;

export const OfpInstructionType = {
  GOTO_TABLE: 1,
  WRITE_METADATA: 2,
  WRITE_ACTIONS: 3,
  APPLY_ACTIONS: 4,
  CLEAR_ACTIONS: 5,
  METER: 6,
  EXPERIMENTER: 0xffff,
} as const;
