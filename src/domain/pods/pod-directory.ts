/**
 * Which ports of the bridge are pods: the pod directory, the loop's one source of them.
 * OVSDB is today's (src/adapters/ovs/ovsdb-pod-directory.ts: the Interface rows a CNI
 * plugin registered); another source (a Kubernetes watch, a file) is one more module that
 * gives these ports, and one line in the composition root. The loop reads only what is
 * here: a port's name and number, the pod behind it, the pod's addresses and MAC, and,
 * for the tunnel port, what kind of port it is.
 */
import type { TunnelPortFacts } from '../peers/tunnel-port.js';

declare const podNameKind: unique symbol;
/** A pod, as its CNI plugin names it: `namespace/name` (or `name` alone where no namespace was given). */
export type PodName = string & { readonly [podNameKind]: 'pod' };

/** The name of the pod `name` in `namespace` (none: the name alone). */
export function podName(namespace: string | undefined, name: string): PodName {
  return (namespace === undefined ? name : `${namespace}/${name}`) as PodName;
}

/** A numbered port of the bridge: its OpenFlow number, its name, and the pod behind it if one is. */
export interface BridgePort {
  ofport: number;
  /** The switch's name for it. */
  name: string;
  pod?: PodName;
}

export function samePort(a: BridgePort | undefined, b: BridgePort | undefined): boolean {
  return a?.ofport === b?.ofport && a?.name === b?.name && a?.pod === b?.pod;
}

/** One port as the directory tells it; `type` and `options` say what kind of port it is (a tunnel's are checked). */
export interface DirectoryPort extends TunnelPortFacts {
  readonly name: string;
  /** Its OpenFlow port number; undefined until the switch gives it one. Never the bridge's own LOCAL port. */
  readonly ofport: number | undefined;
  /** The pod behind it; none for the gateway, a tunnel, a device. */
  readonly pod?: PodName;
  /** The pod's unicast addresses, either family, where the directory knows them. */
  readonly addresses?: readonly string[];
  /** The pod's MAC, where the directory knows it. */
  readonly mac?: string;
}

/** The ports of the bridge, kept current. */
export interface PodDirectory {
  /** Whether the directory's source is reachable now (a status line). */
  readonly connected: boolean;
  /** Every port now. */
  ports(): readonly DirectoryPort[];
  /** Told of every change after the listener was added; `resync` after the source came back. */
  onChange(listener: (ports: readonly DirectoryPort[], resync: boolean) => void): void;
  onDisconnected(listener: (error: Error) => void): void;
  onReconnected(listener: () => void): void;
  close(): Promise<void>;
}

/** The numbered port named `name` among `ports`, if there is one. */
export function portNamed(
  ports: readonly DirectoryPort[],
  name: string | undefined,
): (DirectoryPort & { ofport: number }) | undefined {
  if (name === undefined) return undefined;
  const port = ports.find((candidate) => candidate.name === name);
  return port?.ofport === undefined ? undefined : (port as DirectoryPort & { ofport: number });
}
