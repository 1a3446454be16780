/**
 * An OpenFlow 1.3 controller connection to one switch (Open vSwitch's `<bridge>.mgmt`, or
 * a TCP listener): handshake, xid correlation, errors, barriers, pipelined batches,
 * multipart dumps, packet-in events, echo keepalive and reconnection.
 *
 * - Handshake: HELLO with a version bitmap offering 1.3 only; the switch's HELLO must
 *   offer 1.3 too (OVS sends a bare HELLO whose header carries its highest version, 0x06
 *   by default: 1.3 is then common when that is ≥ 0x04), else the connection fails with
 *   an UnavailableError naming both sides' versions. Then FEATURES_REQUEST for the
 *   datapath id.
 * - Requests get consecutive xids; a reply or OFPT_ERROR with that xid settles them. An
 *   error becomes an `OpenFlowError` naming the error and the request. Requests without
 *   a reply (FLOW_MOD, GROUP_MOD, PACKET_OUT, SET_*) are confirmed by a barrier: OVS
 *   answers in order, so every error for them arrives before the barrier's reply.
 * - Keepalive: the switch's ECHO_REQUESTs are answered at once; when the switch has been
 *   silent for `echoIntervalMs`, an ECHO_REQUEST goes out, and no reply within
 *   `timeoutMs` counts as a lost connection.
 * - A lost connection rejects everything pending with an UnavailableError and emits
 *   `disconnected`; with `reconnect`, it is dialled again with exponential backoff and,
 *   once the handshake (and any packet-in configuration) is redone, `reconnected` is
 *   emitted. A restarted ovs-vswitchd has no flows and no groups: consumers replay them
 *   on `reconnected`.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { UnavailableError, isSystemError } from '../../errors.js';
import type { Action } from '../../protocol/openflow/action.js';
import type { AsyncConfig } from '../../protocol/openflow/async-config.js';
import { PacketInReason, reasonMask } from '../../protocol/openflow/async-reason.js';
import { summarize } from '../../protocol/openflow/describe.js';
import { connectFailure, parseEndpoint, type Endpoint } from '../../wire/endpoint.js';
import { OFP_ERROR_TYPES } from '../../protocol/openflow/error-code.js';
import type { ErrorMessage } from '../../protocol/openflow/error-message.js';
import { OpenFlowError, type FailedRequest } from '../../protocol/openflow/errors.js';
import type { FeaturesReply } from '../../protocol/openflow/features.js';
import type { FlowMod } from '../../protocol/openflow/flow-mod.js';
import { flowStatsRequest, type FlowStats, type FlowStatsRequest } from '../../protocol/openflow/flow-stats.js';
import { OpenFlowFramer } from '../../protocol/openflow/framer.js';
import type { GroupDesc } from '../../protocol/openflow/group-desc.js';
import type { GroupMod } from '../../protocol/openflow/group-mod.js';
import type { Hello } from '../../protocol/openflow/hello.js';
import * as codec from '../../protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { describeOfpType, describeOfpVersion, OFP13_VERSION, type OfpTypeName } from '../../protocol/openflow/message-type.js';
import type { MultipartReply, MultipartRequestBody } from '../../protocol/openflow/multipart.js';
import { MULTIPART_MORE } from '../../protocol/openflow/multipart-type.js';
import type { PacketIn } from '../../protocol/openflow/packet-in.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import type { SwitchConfig } from '../../protocol/openflow/switch-config.js';
import { backoffDelay, type BackoffOptions } from '../../runtime/backoff.js';
import { readU32 } from '../../protocol/openflow/wire.js';

/** Delays as the OVSDB client's (src/wire/backoff.ts), and a limit on attempts. */
export interface ReconnectOptions extends BackoffOptions {
  /** Give up (and emit `closed`) after this many failed attempts in a row (default: never). */
  maxAttempts?: number;
}

export interface OpenFlowConnectionOptions {
  /** `unix:<path>` or `tcp:<host>:<port>`. */
  endpoint: string;
  /** Limit for connecting plus handshake, and the default limit for each request (default 10 s). */
  timeoutMs?: number;
  /** Probe a silent switch with ECHO_REQUEST after this long (default 5 s; 0 never). */
  echoIntervalMs?: number;
  /** Dial again after losing the connection (default false). */
  reconnect?: boolean | ReconnectOptions;
}

export interface RequestOptions {
  /** Overrides the connection's timeoutMs for this request. */
  timeoutMs?: number;
}

export interface PacketInOptions {
  /** miss_send_len: octets of a table-miss packet to send (default 0xffff: all of it, unbuffered). */
  missSendLen?: number;
  /** PacketInReason values to receive (default NO_MATCH and ACTION). */
  reasons?: number[];
}

/** What came back for a batch: the errors, by index into the batch. An empty map: all applied. */
export interface BatchResult {
  errors: Map<number, OpenFlowError>;
}

export interface FlowDumpFilter {
  /** One table (default: all). */
  tableId?: number;
  cookie?: bigint;
  /** Bits of `cookie` that must match (default: all of them when `cookie` is given, else none). */
  cookieMask?: bigint;
  outPort?: number;
  outGroup?: number;
  match?: FlowStatsRequest['match'];
}

export interface PacketOutRequest {
  data: Uint8Array;
  actions: Action[];
  /** Default OfpPort.CONTROLLER. */
  inPort?: number;
}

export interface OpenFlowConnectionEvents {
  /** A PACKET_IN (after enablePacketIn()). */
  'packet-in': [packetIn: PacketIn];
  /** The connection was lost; everything pending was rejected with `reason`. */
  disconnected: [reason: UnavailableError];
  /** Dialled again after `disconnected`, handshake and packet-in configuration redone: replay flows and groups now. */
  reconnected: [features: FeaturesReply];
  /** Closed for good: by close(), or lost without (or after the last) reconnect attempt. */
  closed: [];
  /** An OFPT_ERROR for no pending request (e.g. for a message sent with send()). */
  'switch-error': [error: OpenFlowError];
  /** A message the switch sent unasked that has no event of its own (PORT_STATUS, FLOW_REMOVED, ...). */
  message: [message: OpenFlowMessage];
  /** A message that could not be decoded and belonged to no pending request. */
  'protocol-error': [error: Error];
}

type State = 'connecting' | 'connected' | 'reconnecting' | 'closed';

interface Pending {
  request: OpenFlowMessage;
  xid: number;
  /** The reply type that settles it; undefined for a batch member, which only an error settles. */
  replyType: OfpTypeName | undefined;
  parts: MultipartReply[];
  timeoutMs: number;
  timer: NodeJS.Timeout | undefined;
  resolve: (reply: OpenFlowMessage, parts: MultipartReply[]) => void;
  reject: (error: Error) => void;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_ECHO_INTERVAL_MS = 5_000;
/** Batches are encoded into buffers of about this size, each one socket write. */
const BATCH_CHUNK_OCTETS = 256 * 1024;
const CONNECT_HINT = 'is ovs-vswitchd running? set --openflow';

export class OpenFlowConnection extends EventEmitter<OpenFlowConnectionEvents> {
  readonly endpoint: string;
  private readonly target: Endpoint;
  private readonly timeoutMs: number;
  private readonly echoIntervalMs: number;
  private readonly reconnectOptions: (ReconnectOptions & { maxAttempts: number }) | undefined;

  private state: State = 'connecting';
  private socket: net.Socket | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextXid = 1;
  private featuresReply: FeaturesReply | undefined;
  private helloWaiter: { resolve: (hello: Hello) => void; reject: (error: Error) => void } | undefined;
  private packetInConfig: Required<PacketInOptions> | undefined;
  private lastReceived = 0;
  private echoTimer: NodeJS.Timeout | undefined;
  private echoOutstanding = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  private constructor(options: OpenFlowConnectionOptions) {
    super();
    this.endpoint = options.endpoint;
    this.target = parseEndpoint(options.endpoint, 'OpenFlow');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.echoIntervalMs = options.echoIntervalMs ?? DEFAULT_ECHO_INTERVAL_MS;
    const reconnect = options.reconnect === true ? {} : options.reconnect || undefined;
    this.reconnectOptions = reconnect && { ...reconnect, maxAttempts: reconnect.maxAttempts ?? Number.POSITIVE_INFINITY };
  }

  /**
   * Connects and completes the handshake. Rejects with UnavailableError (exit 69) when the
   * switch cannot be reached or speaks no OpenFlow 1.3, PermissionError (exit 77) when the
   * socket refuses this user, UsageError for a bad endpoint (see connectFailure).
   */
  static async connect(options: OpenFlowConnectionOptions): Promise<OpenFlowConnection> {
    const connection = new OpenFlowConnection(options);
    try {
      await connection.open();
    } catch (error) {
      connection.state = 'closed';
      throw error;
    }
    return connection;
  }

  /** The switch's FEATURES_REPLY of the current (or last) connection. */
  get features(): FeaturesReply {
    if (!this.featuresReply) throw new Error('not connected yet');
    return this.featuresReply;
  }

  get datapathId(): bigint {
    return this.features.datapathId;
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  // --- requests --------------------------------------------------------------------------

  /** Resolves once the switch has processed everything sent before it. */
  async barrier(options: RequestOptions = {}): Promise<void> {
    await this.transact({ type: 'BARRIER_REQUEST', xid: 0 }, 'BARRIER_REPLY', options);
  }

  /** Round-trip time of an ECHO_REQUEST, in milliseconds. */
  async echo(data: Uint8Array = new Uint8Array(0), options: RequestOptions = {}): Promise<number> {
    const started = performance.now();
    await this.transact({ type: 'ECHO_REQUEST', xid: 0, data }, 'ECHO_REPLY', options);
    return performance.now() - started;
  }

  async getSwitchConfig(options: RequestOptions = {}): Promise<SwitchConfig> {
    return (await this.transact({ type: 'GET_CONFIG_REQUEST', xid: 0 }, 'GET_CONFIG_REPLY', options)) as SwitchConfig;
  }

  async getAsync(options: RequestOptions = {}): Promise<AsyncConfig> {
    return (await this.transact({ type: 'GET_ASYNC_REQUEST', xid: 0 }, 'GET_ASYNC_REPLY', options)) as AsyncConfig;
  }

  /**
   * Sends `messages` (FLOW_MODs, GROUP_MODs, ... anything the switch does not answer)
   * back to back without waiting, as fast as the socket takes them, then one barrier.
   * Resolves with the errors the switch sent for them, by index; rejects only when the
   * connection fails. Every message is encoded before the first is sent, so a message
   * that cannot be encoded (RangeError) sends none of them.
   */
  async batch(messages: readonly OpenFlowMessage[], options: RequestOptions = {}): Promise<BatchResult> {
    this.assertConnected();
    return this.batchOn(messages, options);
  }

  /** Sends one FLOW_MOD and a barrier; rejects with the switch's OpenFlowError if it refused it. */
  async sendFlowMod(mod: FlowMod, options: RequestOptions = {}): Promise<void> {
    await this.applyOne(mod, options);
  }

  /** Sends one GROUP_MOD and a barrier; rejects with the switch's OpenFlowError if it refused it. */
  async sendGroupMod(mod: GroupMod, options: RequestOptions = {}): Promise<void> {
    await this.applyOne(mod, options);
  }

  /** Sends a PACKET_OUT of `request.data` (an Ethernet frame) and a barrier. */
  async sendPacketOut(request: PacketOutRequest, options: RequestOptions = {}): Promise<void> {
    await this.applyOne(packetOut({ data: request.data, actions: request.actions, ...(request.inPort === undefined ? {} : { inPort: request.inPort }) }), options);
  }

  /** Sends one message without waiting for anything; an error for it comes as a `switch-error` event. Returns its xid. */
  send(message: OpenFlowMessage): number {
    this.assertConnected();
    const xid = this.allocateXid();
    this.writeMessages([message], [xid]);
    return xid;
  }

  /** Every flow (or those `filter` selects), joined from all the parts of the multipart reply. */
  async dumpFlows(filter: FlowDumpFilter = {}, options: RequestOptions = {}): Promise<FlowStats[]> {
    const { cookie, cookieMask, ...rest } = filter;
    const request = flowStatsRequest({
      ...rest,
      ...(cookie === undefined ? {} : { cookie, cookieMask: cookieMask ?? 0xffffffffffffffffn }),
      ...(cookie === undefined && cookieMask !== undefined ? { cookieMask } : {}),
    });
    const parts = await this.multipart(request, options);
    return parts.flatMap((part) => (part.body.kind === 'FLOW' ? part.body.flows : []));
  }

  /** Every group, with its buckets (GROUP_DESC), joined from all the parts of the reply. */
  async dumpGroups(options: RequestOptions = {}): Promise<GroupDesc[]> {
    const parts = await this.multipart({ kind: 'GROUP_DESC' }, options);
    return parts.flatMap((part) => (part.body.kind === 'GROUP_DESC' ? part.body.groups : []));
  }

  /** Sends a multipart request; resolves with every part of the reply (the last one without MULTIPART_MORE). */
  async multipart(body: MultipartRequestBody, options: RequestOptions = {}): Promise<MultipartReply[]> {
    let parts: MultipartReply[] = [];
    await this.transact({ type: 'MULTIPART_REQUEST', xid: 0, flags: 0, body }, 'MULTIPART_REPLY', options, (all) => (parts = all));
    return parts;
  }

  /**
   * Asks the switch for packet-ins on this connection, and again after every reconnect.
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
  async enablePacketIn(options: PacketInOptions = {}): Promise<void> {
    this.assertConnected();
    const config = {
      missSendLen: options.missSendLen ?? 0xffff,
      reasons: options.reasons ?? [PacketInReason.NO_MATCH, PacketInReason.ACTION],
    };
    await this.configurePacketIn(config);
    this.packetInConfig = config;
  }

  /** Closes the connection for good (no reconnect). Pending requests are rejected. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      const wasOpen = this.state !== 'closed';
      this.state = 'closed';
      clearTimeout(this.reconnectTimer);
      this.stopEcho();
      const socket = this.socket;
      this.socket = undefined;
      this.failAll(new UnavailableError(`OpenFlow connection ${this.endpoint} was closed`));
      if (socket && !socket.destroyed) {
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        socket.end();
        const timer = setTimeout(() => socket.destroy(), 1000);
        await closed;
        clearTimeout(timer);
      }
      if (wasOpen) this.emit('closed');
    })());
  }

  // --- connecting ------------------------------------------------------------------------

  /** Dials, exchanges HELLOs, asks for features and re-applies packet-in settings. */
  private async open(): Promise<FeaturesReply> {
    const socket = await this.dial();
    if (this.isClosed()) {
      socket.destroy();
      throw new UnavailableError(`OpenFlow connection ${this.endpoint} was closed`);
    }
    const hello = this.awaitHello();
    this.attach(socket);
    try {
      this.writeMessages([{ type: 'HELLO', xid: 0, version: OFP13_VERSION, versions: [OFP13_VERSION] }], [this.allocateXid()]);
      this.checkVersion(await hello);
      const features = (await this.transactOn({ type: 'FEATURES_REQUEST', xid: 0 }, 'FEATURES_REPLY', {})) as FeaturesReply;
      if (this.packetInConfig) await this.configurePacketIn(this.packetInConfig);
      // close() may have been called while the handshake ran.
      if (this.isClosed()) throw new UnavailableError(`OpenFlow connection ${this.endpoint} was closed`);
      this.featuresReply = features;
      this.state = 'connected';
      this.startEcho();
      return features;
    } catch (error) {
      this.helloWaiter = undefined;
      if (this.socket === socket) this.socket = undefined;
      // end(), not destroy(): a HELLO_FAILED error we wrote should reach the switch.
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
      throw error;
    }
  }

  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private dial(): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const socket =
        this.target.kind === 'unix' ? net.connect({ path: this.target.path }) : net.connect({ host: this.target.host, port: this.target.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(connectFailure(this.target, 'OpenFlow', `no answer within ${this.timeoutMs} ms`, { unavailableHint: CONNECT_HINT }));
      }, this.timeoutMs);
      const onError = (error: Error) => {
        clearTimeout(timer);
        const code = isSystemError(error) ? error.code : error.message;
        // As the OVSDB client's: EACCES is exit 77 whichever socket refused us.
        reject(connectFailure(this.target, 'OpenFlow', code, { unavailableHint: CONNECT_HINT, cause: error }));
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        if (this.target.kind === 'tcp') socket.setNoDelay(true);
        resolve(socket);
      });
    });
  }

  private awaitHello(): Promise<Hello> {
    return new Promise<Hello>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.helloWaiter = undefined;
        reject(new UnavailableError(`OpenFlow switch at ${this.endpoint} sent no HELLO within ${this.timeoutMs} ms`, { hint: CONNECT_HINT }));
      }, this.timeoutMs);
      this.helloWaiter = {
        resolve: (hello) => (clearTimeout(timer), resolve(hello)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
    });
  }

  /** OpenFlow 1.3.5 §6.3.1: with bitmaps on both sides, the highest common version; else the lower of the two header versions. */
  private checkVersion(hello: Hello): void {
    const speaks13 = hello.versions ? hello.versions.includes(OFP13_VERSION) : hello.version >= OFP13_VERSION;
    if (speaks13) return;
    const offered = hello.versions ? hello.versions.map(describeOfpVersion).join(', ') : `up to ${describeOfpVersion(hello.version)}`;
    const text = new TextEncoder().encode(`this controller speaks OpenFlow 1.3 only; you offer ${offered}`);
    this.writeMessages([{ type: 'ERROR', xid: 0, errorType: OFP_ERROR_TYPES.HELLO_FAILED, code: 0, data: text }], [this.allocateXid()]);
    throw new UnavailableError(`OpenFlow switch at ${this.endpoint} does not speak OpenFlow 1.3 (it offers ${offered})`, {
      hint: 'allow OpenFlow 1.3 on the bridge, e.g. ovs-vsctl set bridge br-int protocols=OpenFlow13',
    });
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    this.lastReceived = Date.now();
    const framer = new OpenFlowFramer((bytes) => this.onMessage(bytes));
    let failure: Error | undefined;
    socket.on('data', (chunk: Buffer) => {
      try {
        framer.push(chunk);
      } catch (error) {
        // The stream is out of step (a length below 8): nothing after this can be framed.
        socket.destroy(error instanceof Error ? error : new Error(String(error)));
      }
    });
    socket.on('error', (error) => (failure = error));
    socket.on('close', () => this.onClose(socket, failure));
  }

  private onClose(socket: net.Socket, failure: Error | undefined): void {
    if (socket !== this.socket) return; // an old link, or one open() already gave up
    this.socket = undefined;
    this.stopEcho();
    const cause = failure ? (isSystemError(failure) ? failure.code : failure.message) : 'closed by the switch';
    const lost = new UnavailableError(`OpenFlow connection ${this.endpoint} lost: ${cause}`, {
      hint: 'is ovs-vswitchd running?',
      ...(failure ? { cause: failure } : {}),
    });
    this.helloWaiter?.reject(lost);
    this.helloWaiter = undefined;
    this.failAll(lost);
    if (this.state !== 'connected') return; // open() is handling it, or close() was called
    this.emit('disconnected', lost);
    if (this.reconnectOptions) {
      this.state = 'reconnecting';
      this.scheduleReconnect(0);
    } else {
      this.state = 'closed';
      this.emit('closed');
    }
  }

  private scheduleReconnect(failures: number): void {
    const options = this.reconnectOptions!;
    const delay = backoffDelay(failures, options);
    this.reconnectTimer = setTimeout(() => {
      this.open().then(
        (features) => this.emit('reconnected', features),
        () => {
          if (this.state === 'closed') return;
          if (failures + 1 >= options.maxAttempts) {
            this.state = 'closed';
            this.emit('closed');
          } else this.scheduleReconnect(failures + 1);
        },
      );
    }, delay);
  }

  // --- keepalive -------------------------------------------------------------------------

  private startEcho(): void {
    if (this.echoIntervalMs <= 0) return;
    this.echoTimer = setInterval(() => this.probe(), this.echoIntervalMs);
    this.echoTimer.unref();
  }

  private stopEcho(): void {
    clearInterval(this.echoTimer);
    this.echoTimer = undefined;
    this.echoOutstanding = false;
  }

  private probe(): void {
    if (this.echoOutstanding || Date.now() - this.lastReceived < this.echoIntervalMs || this.state !== 'connected') return;
    const socket = this.socket;
    this.echoOutstanding = true;
    this.transactOn({ type: 'ECHO_REQUEST', xid: 0, data: new Uint8Array(0) }, 'ECHO_REPLY', {}).then(
      () => (this.echoOutstanding = false),
      () => {
        this.echoOutstanding = false;
        // Still the same link, so not a loss: silence past the timeout. The switch is hung or the path is gone.
        if (socket && socket === this.socket && this.state === 'connected') {
          socket.destroy(new Error(`no reply to ECHO_REQUEST within ${this.timeoutMs} ms`));
        }
      },
    );
  }

  // --- receiving -------------------------------------------------------------------------

  private onMessage(bytes: Uint8Array): void {
    this.lastReceived = Date.now();
    let message: OpenFlowMessage;
    try {
      message = codec.decode(bytes);
    } catch (error) {
      this.onUndecodable(bytes, error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (this.helloWaiter) {
      this.onHandshakeMessage(message);
      return;
    }
    if (bytes[0] !== OFP13_VERSION) {
      this.onUndecodable(bytes, new Error(`${message.type} in version ${describeOfpVersion(bytes[0]!)} on an OpenFlow 1.3 connection`));
      return;
    }
    switch (message.type) {
      case 'ECHO_REQUEST':
        if (this.socket) this.writeMessages([{ type: 'ECHO_REPLY', xid: message.xid, data: message.data }], [message.xid]);
        return;
      case 'ERROR':
        this.onError(message);
        return;
      case 'HELLO':
        return; // a repeated HELLO carries nothing new
    }
    const pending = this.pending.get(message.xid);
    if (pending && pending.replyType === message.type) {
      if (message.type === 'MULTIPART_REPLY') {
        pending.parts.push(message);
        if (message.flags & MULTIPART_MORE) {
          this.armTimer(pending); // each part restarts the clock
          return;
        }
      }
      this.settle(pending);
      pending.resolve(message, pending.parts);
      return;
    }
    if (message.type === 'PACKET_IN') this.emit('packet-in', message);
    else this.emit('message', message);
  }

  private onHandshakeMessage(message: OpenFlowMessage): void {
    const waiter = this.helloWaiter!;
    if (message.type === 'HELLO') {
      this.helloWaiter = undefined;
      waiter.resolve(message);
    } else if (message.type === 'ERROR') {
      this.helloWaiter = undefined;
      const text = new TextDecoder().decode(message.data).trim();
      const error = new OpenFlowError(message, { type: 'HELLO', xid: message.xid }, this.endpoint);
      waiter.reject(
        new UnavailableError(`OpenFlow switch at ${this.endpoint} refused the handshake: ${error.errorName}${text ? ` (${text})` : ''}`, {
          hint: 'allow OpenFlow 1.3 on the bridge, e.g. ovs-vsctl set bridge br-int protocols=OpenFlow13',
          cause: error,
        }),
      );
    }
    // Anything else before HELLO breaks §6.3.1; wait for the HELLO (or the timeout).
  }

  private onError(message: ErrorMessage): void {
    const pending = this.pending.get(message.xid);
    const request: FailedRequest = pending
      ? { type: describeOfpType(codec.typeNumberOf(pending.request)), xid: message.xid, summary: summarize(pending.request, message.xid) }
      : { type: describeOfpType(message.data[1] ?? -1), xid: message.xid };
    const error = new OpenFlowError(message, request, this.endpoint);
    if (!pending) {
      this.emit('switch-error', error);
      return;
    }
    this.settle(pending);
    pending.reject(error);
  }

  private onUndecodable(bytes: Uint8Array, error: Error): void {
    const xid = bytes.length >= 8 ? readU32(bytes, 4) : -1;
    const pending = this.pending.get(xid);
    if (pending && pending.replyType !== undefined) {
      this.settle(pending);
      pending.reject(error);
    } else this.emit('protocol-error', error);
  }

  // --- sending ---------------------------------------------------------------------------

  private assertConnected(): void {
    if (this.state === 'connected' && this.socket) return;
    const why = this.state === 'reconnecting' ? 'reconnecting' : this.state === 'connecting' ? 'connecting' : 'closed';
    throw new UnavailableError(`OpenFlow connection ${this.endpoint} is not connected (${why})`, { hint: 'is ovs-vswitchd running?' });
  }

  private allocateXid(): number {
    const xid = this.nextXid;
    this.nextXid = this.nextXid >= 0xffffffff ? 1 : this.nextXid + 1;
    return xid;
  }

  /** A request with a reply, on the connected link (public entry points). */
  private async transact(
    message: OpenFlowMessage,
    replyType: OfpTypeName,
    options: RequestOptions,
    onParts?: (parts: MultipartReply[]) => void,
  ): Promise<OpenFlowMessage> {
    this.assertConnected();
    return this.transactOn(message, replyType, options, onParts);
  }

  /** A request with a reply, on whatever link is attached (also during the handshake). */
  private transactOn(
    message: OpenFlowMessage,
    replyType: OfpTypeName,
    options: RequestOptions,
    onParts?: (parts: MultipartReply[]) => void,
  ): Promise<OpenFlowMessage> {
    return new Promise<OpenFlowMessage>((resolve, reject) => {
      if (!this.socket) {
        reject(new UnavailableError(`OpenFlow connection ${this.endpoint} is not connected`, { hint: 'is ovs-vswitchd running?' }));
        return;
      }
      const xid = this.allocateXid();
      const pending: Pending = {
        request: message,
        xid,
        replyType,
        parts: [],
        timeoutMs: options.timeoutMs ?? this.timeoutMs,
        timer: undefined,
        resolve: (reply, parts) => {
          onParts?.(parts);
          resolve(reply);
        },
        reject,
      };
      this.pending.set(xid, pending);
      this.armTimer(pending);
      try {
        this.writeMessages([message], [xid]);
      } catch (error) {
        this.settle(pending);
        reject(error);
      }
    });
  }

  private armTimer(pending: Pending): void {
    clearTimeout(pending.timer);
    pending.timer = setTimeout(() => {
      this.settle(pending);
      pending.reject(
        new UnavailableError(`no reply from OpenFlow switch at ${this.endpoint} to ${summarize(pending.request, pending.xid)} within ${pending.timeoutMs} ms`, {
          hint: 'is ovs-vswitchd overloaded or hung?',
        }),
      );
    }, pending.timeoutMs);
  }

  private settle(pending: Pending): void {
    clearTimeout(pending.timer);
    this.pending.delete(pending.xid);
  }

  private failAll(error: Error): void {
    for (const pending of [...this.pending.values()]) {
      this.settle(pending);
      pending.reject(error);
    }
  }

  private async applyOne(message: OpenFlowMessage, options: RequestOptions): Promise<void> {
    const { errors } = await this.batch([message], options);
    const error = errors.get(0);
    if (error) throw error;
  }

  /** batch() without the connected check, for the handshake. */
  private async batchOn(messages: readonly OpenFlowMessage[], options: RequestOptions): Promise<BatchResult> {
    const errors = new Map<number, OpenFlowError>();
    const xids = messages.map(() => this.allocateXid());
    const chunks = encodeChunks(messages, xids); // validate everything before sending anything
    const members: Pending[] = messages.map((request, index) => ({
      request,
      xid: xids[index]!,
      replyType: undefined,
      parts: [],
      timeoutMs: 0,
      timer: undefined,
      resolve: () => undefined,
      reject: (error) => {
        if (error instanceof OpenFlowError) errors.set(index, error);
      },
    }));
    for (const member of members) this.pending.set(member.xid, member);
    // One time limit for the whole batch: a switch that stops reading must not leave the
    // writes waiting for a drain forever (the barrier's own timer starts only after them).
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    try {
      for (const chunk of chunks) await this.writeChunk(chunk, deadline, timeoutMs);
      await this.transactOn({ type: 'BARRIER_REQUEST', xid: 0 }, 'BARRIER_REPLY', { timeoutMs: Math.max(1, deadline - Date.now()) });
    } finally {
      for (const member of members) this.pending.delete(member.xid);
    }
    return { errors };
  }

  private writeMessages(messages: readonly OpenFlowMessage[], xids: readonly number[]): void {
    const socket = this.socket;
    if (!socket) throw new UnavailableError(`OpenFlow connection ${this.endpoint} is not connected`, { hint: 'is ovs-vswitchd running?' });
    for (const chunk of encodeChunks(messages, xids)) socket.write(chunk);
  }

  /**
   * Writes one chunk; waits while the socket's buffer is full (backpressure), until
   * `deadline`: past it the switch is taken to be stuck and the connection is dropped.
   */
  private async writeChunk(chunk: Uint8Array, deadline: number, timeoutMs: number): Promise<void> {
    const socket = this.socket;
    if (!socket || socket.destroyed) throw new UnavailableError(`OpenFlow connection ${this.endpoint} lost while sending`, { hint: 'is ovs-vswitchd running?' });
    if (socket.write(chunk)) return;
    await new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        clearTimeout(timer);
        socket.off('drain', drained);
        socket.off('close', closed);
        if (error) reject(error);
        else resolve();
      };
      const drained = () => finish();
      const closed = () => finish(new UnavailableError(`OpenFlow connection ${this.endpoint} lost while sending`, { hint: 'is ovs-vswitchd running?' }));
      const timer = setTimeout(() => {
        const error = new UnavailableError(`OpenFlow switch at ${this.endpoint} stopped reading: a batch was not sent within ${timeoutMs} ms`, { hint: 'is ovs-vswitchd overloaded or stuck?' });
        finish(error);
        socket.destroy(error);
      }, Math.max(1, deadline - Date.now()));
      socket.on('drain', drained);
      socket.once('close', closed);
    });
  }

  private async configurePacketIn(config: Required<PacketInOptions>): Promise<void> {
    const current = (await this.transactOn({ type: 'GET_ASYNC_REQUEST', xid: 0 }, 'GET_ASYNC_REPLY', {})) as AsyncConfig;
    const switchConfig = (await this.transactOn({ type: 'GET_CONFIG_REQUEST', xid: 0 }, 'GET_CONFIG_REPLY', {})) as SwitchConfig;
    const { errors } = await this.batchOn(
      [
        {
          type: 'SET_ASYNC',
          xid: 0,
          packetIn: [reasonMask(config.reasons), current.packetIn[1]],
          portStatus: current.portStatus,
          flowRemoved: current.flowRemoved,
        },
        { type: 'SET_CONFIG', xid: 0, flags: switchConfig.flags, missSendLen: config.missSendLen },
      ],
      {},
    );
    const error = errors.get(0) ?? errors.get(1);
    if (error) throw error;
  }
}

/** Encodes `messages` with `xids` into buffers of about BATCH_CHUNK_OCTETS (one message may exceed it). */
function encodeChunks(messages: readonly OpenFlowMessage[], xids: readonly number[]): Uint8Array[] {
  const lengths = messages.map((message) => codec.encodingLength(message));
  const chunks: Uint8Array[] = [];
  for (let first = 0; first < messages.length; ) {
    let size = 0;
    let end = first;
    while (end < messages.length && (end === first || size + lengths[end]! <= BATCH_CHUNK_OCTETS)) size += lengths[end++]!;
    const chunk = Buffer.alloc(size);
    let offset = 0;
    for (let i = first; i < end; i++) {
      codec.encode(messages[i]!, chunk, offset);
      chunk.writeUInt32BE(xids[i]!, offset + 4); // the connection's xid, not the message's
      offset += lengths[i]!;
    }
    chunks.push(chunk);
    first = end;
  }
  return chunks;
}
