/**
 * A classic BPF interpreter for the opcodes igmpFilter uses, to check the program's logic
 * without the kernel. (The kernel's own verifier and interpreter run in the e2e tests.)
 */
import {
  BPF_ABS,
  BPF_ALU,
  BPF_AND,
  BPF_B,
  BPF_H,
  BPF_JEQ,
  BPF_JGE,
  BPF_JMP,
  BPF_K,
  BPF_LD,
  BPF_LEN,
  BPF_RET,
  BPF_W,
  type BpfInstruction,
} from '../../src/packet/bpf.js';

export function runBpf(program: readonly BpfInstruction[], packet: Uint8Array): number {
  let a = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const { code, jt, jf, k } = program[pc]!;
    switch (code) {
      case BPF_LD | BPF_W | BPF_LEN:
        a = packet.length;
        break;
      case BPF_LD | BPF_H | BPF_ABS:
        if (k + 2 > packet.length) return 0; // an out-of-range load ends the program with 0
        a = (packet[k]! << 8) | packet[k + 1]!;
        break;
      case BPF_LD | BPF_B | BPF_ABS:
        if (k + 1 > packet.length) return 0;
        a = packet[k]!;
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        a = (a & k) >>> 0;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += a === k ? jt : jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += a >= k ? jt : jf;
        break;
      case BPF_RET | BPF_K:
        return k;
      default:
        throw new Error(`opcode 0x${code.toString(16)} not in this interpreter`);
    }
  }
  throw new Error('program ran off its end');
}
