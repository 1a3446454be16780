/**
 * An OpenFlow 1.3 controller connection to one switch (Open vSwitch's `<bridge>.mgmt`, or
 * a TCP listener). This class ties the parts together:
 *
 * - link.ts: the socket, framing, writes with backpressure;
 * - handshake.ts: the HELLO exchange (1.3 only); then FEATURES_REQUEST for the datapath id;
 * - inbound.ts: where each message from the switch goes (waiter, requests or events);
 * - requests.ts: xids, replies and OFPT_ERRORs settling requests, typed by reply-types.ts;
 * - batch.ts: pipelined messages without replies, confirmed by one barrier;
 * - flow-group-reads.ts and meters.ts: the switch's flows, groups and meters read back;
 * - keepalive.ts: ECHO_REQUEST after `echoIntervalMs` of silence (the switch's are answered by inbound.ts);
 * - packet-in-config.ts: SET_ASYNC and SET_CONFIG, redone after every reconnect;
 * - runtime/reconnector.ts: with `reconnect`, dialling again with exponential backoff.
 *
 * A lost connection rejects everything pending with an UnavailableError and emits
 * `disconnected`; with `reconnect`, once the handshake (and any packet-in configuration)
 * is redone, `reconnected` is emitted. A restarted ovs-vswitchd has no flows and no
 * groups: consumers replay them on `reconnected`.
 */
import { EventEmitter } from 'node:events';
import { UnavailableError, isSystemError } from '../../errors.js';
import type { AsyncConfig } from '../../protocol/openflow/async-config.js';
import type { FeaturesReply } from '../../protocol/openflow/features.js';
import type { FlowMod } from '../../protocol/openflow/flow-mod.js';
import type { FlowStats } from '../../protocol/openflow/flow-stats.js';
import type { GroupDesc } from '../../protocol/openflow/group-desc.js';
import { OFPG_ALL, type GroupStats } from '../../protocol/openflow/group-stats.js';
import type { GroupMod } from '../../protocol/openflow/group-mod.js';
import type { MeterFeatures } from '../../protocol/openflow/meter-features.js';
import type { MeterConfig, MeterStats } from '../../protocol/openflow/meter-stats.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import type { MultipartReply, MultipartRequestBody } from '../../protocol/openflow/multipart.js';
import { packetOut } from '../../protocol/openflow/packet-out.js';
import type { SwitchConfig } from '../../protocol/openflow/switch-config.js';
import type { BackoffOptions } from '../../runtime/backoff.js';
import { Reconnector } from '../../runtime/reconnector.js';
import { parseEndpoint, type Endpoint } from '../../wire/endpoint.js';
import { BatchSender, type BatchResult } from './batch.js';
import { readFlows, readGroupDescs, readGroupStats } from './flow-group-reads.js';
import { checkVersion, HELLO, HelloWaiter } from './handshake.js';
import { InboundRouter } from './inbound.js';
import { Keepalive } from './keepalive.js';
import { OpenFlowLink } from './link.js';
import { readMeterConfigs, readMeterFeatures, readMeterStats, type MeterSelector } from './meters.js';
import { configurePacketIn, packetInConfig, type PacketInOptions } from './packet-in-config.js';
import { OpenFlowRequests, type RequestOptions } from './requests.js';
import type { FlowDumpFilter, OpenFlowConnectionEvents, PacketOutRequest } from './connection-types.js';

export type { BatchResult } from './batch.js';
export type { PacketInOptions } from './packet-in-config.js';
export type { RequestOptions } from './requests.js';
export type { FlowDumpFilter, OpenFlowConnectionEvents, PacketOutRequest } from './connection-types.js';

/** Delays as the OVSDB client's (src/runtime/backoff.ts), and a limit on attempts. */
interface ReconnectOptions extends BackoffOptions {
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

type State = 'connecting' | 'connected' | 'reconnecting' | 'closed';

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_ECHO_INTERVAL_MS = 5_000;

export class OpenFlowConnection extends EventEmitter<OpenFlowConnectionEvents> {
  readonly endpoint: string;
  private readonly target: Endpoint;
  private readonly timeoutMs: number;
  private readonly echoIntervalMs: number;
  private readonly reconnector: Reconnector<FeaturesReply> | undefined;
  private readonly requests: OpenFlowRequests;
  private readonly batches: BatchSender;
  private readonly inbound: InboundRouter;

  private state: State = 'connecting';
  private link: OpenFlowLink | undefined;
  private keepalive: Keepalive | undefined;
  private featuresReply: FeaturesReply | undefined;
  private helloWaiter: HelloWaiter | undefined;
  private packetInConfig: Required<PacketInOptions> | undefined;
  private closing: Promise<void> | undefined;

  private constructor(options: OpenFlowConnectionOptions) {
    super();
    this.endpoint = options.endpoint;
    this.target = parseEndpoint(options.endpoint, 'OpenFlow');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.echoIntervalMs = options.echoIntervalMs ?? DEFAULT_ECHO_INTERVAL_MS;
    this.requests = new OpenFlowRequests({
      endpoint: this.endpoint,
      timeoutMs: this.timeoutMs,
      write: (messages, xids) => this.write(messages, xids),
    });
    this.batches = new BatchSender({
      endpoint: this.endpoint,
      timeoutMs: this.timeoutMs,
      requests: this.requests,
      link: () => this.link,
    });
    this.inbound = new InboundRouter({
      requests: this.requests,
      helloWaiter: () => this.helloWaiter,
      currentLink: () => this.link,
      events: this,
    });
    const reconnect = options.reconnect === true ? {} : options.reconnect || undefined;
    this.reconnector =
      reconnect &&
      new Reconnector({
        backoff: reconnect,
        // At least one attempt, whatever maxAttempts says.
        maxAttempts: Math.max(1, reconnect.maxAttempts ?? Number.POSITIVE_INFINITY),
        connect: () => this.open(),
        onConnected: (features) => void this.emit('reconnected', features),
        onGiveUp: () => {
          this.state = 'closed';
          this.emit('closed');
        },
      });
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
    this.assertConnected();
    await this.requests.transact({ type: 'BARRIER_REQUEST', xid: 0 }, options);
  }

  /** Round-trip time of an ECHO_REQUEST, in milliseconds. */
  async echo(data: Uint8Array = new Uint8Array(0), options: RequestOptions = {}): Promise<number> {
    this.assertConnected();
    const started = performance.now();
    await this.requests.transact({ type: 'ECHO_REQUEST', xid: 0, data }, options);
    return performance.now() - started;
  }

  async getSwitchConfig(options: RequestOptions = {}): Promise<SwitchConfig> {
    this.assertConnected();
    return this.requests.transact({ type: 'GET_CONFIG_REQUEST', xid: 0 }, options);
  }

  async getAsync(options: RequestOptions = {}): Promise<AsyncConfig> {
    this.assertConnected();
    return this.requests.transact({ type: 'GET_ASYNC_REQUEST', xid: 0 }, options);
  }

  /**
   * Sends `messages` (FLOW_MODs, GROUP_MODs, METER_MODs, ... anything the switch does not answer)
   * back to back without waiting, as fast as the socket takes them, then one barrier.
   * Resolves with the errors the switch sent for them, by index; rejects only when the
   * connection fails. Every message is encoded before the first is sent, so a message
   * that cannot be encoded (RangeError) sends none of them.
   */
  async batch(messages: readonly OpenFlowMessage[], options: RequestOptions = {}): Promise<BatchResult> {
    this.assertConnected();
    return this.batches.send(messages, options);
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
    const inPort = request.inPort === undefined ? {} : { inPort: request.inPort };
    await this.applyOne(packetOut({ data: request.data, actions: request.actions, ...inPort }), options);
  }

  /**
   * Sends one message without waiting for anything; an error for it comes as a `switch-error` event. Returns its xid.
   */
  send(message: OpenFlowMessage): number {
    this.assertConnected();
    const xid = this.requests.allocateXid();
    this.write([message], [xid]);
    return xid;
  }

  /** Every flow (or those `filter` selects), joined from all the parts of the multipart reply. */
  async dumpFlows(filter: FlowDumpFilter = {}, options: RequestOptions = {}): Promise<FlowStats[]> {
    return readFlows((body) => this.multipart(body, options), filter);
  }

  /** Every group, with its buckets (GROUP_DESC), joined from all the parts of the reply. */
  async dumpGroups(options: RequestOptions = {}): Promise<GroupDesc[]> {
    return readGroupDescs((body) => this.multipart(body, options));
  }

  /**
   * The packet and byte counters of one group or every group (GROUP), and of each of its buckets, joined from all the
   * parts of the reply.
   */
  async groupStats(groupId: number = OFPG_ALL, options: RequestOptions = {}): Promise<GroupStats[]> {
    return readGroupStats((body) => this.multipart(body, options), groupId);
  }

  /**
   * Meters (./meters.ts): counters (METER) and flags and bands (METER_CONFIG) of one or all, the limits
   * (METER_FEATURES).
   */
  meterStats(meterId: MeterSelector, options: RequestOptions = {}): Promise<MeterStats[]> {
    return readMeterStats((body) => this.multipart(body, options), meterId);
  }
  meterConfigs(meterId: MeterSelector, options: RequestOptions = {}): Promise<MeterConfig[]> {
    return readMeterConfigs((body) => this.multipart(body, options), meterId);
  }
  meterFeatures(options: RequestOptions = {}): Promise<MeterFeatures> {
    return readMeterFeatures((body) => this.multipart(body, options));
  }

  /** Sends a multipart request; resolves with every part of the reply (the last one without MULTIPART_MORE). */
  async multipart(body: MultipartRequestBody, options: RequestOptions = {}): Promise<MultipartReply[]> {
    this.assertConnected();
    return this.requests.transact({ type: 'MULTIPART_REQUEST', xid: 0, flags: 0, body }, options);
  }

  /** Asks the switch for packet-ins on this connection, and again after every reconnect (see packet-in-config.ts). */
  async enablePacketIn(options: PacketInOptions = {}): Promise<void> {
    this.assertConnected();
    const config = packetInConfig(options);
    await configurePacketIn(this.batches, config);
    this.packetInConfig = config;
  }

  /** Closes the connection for good (no reconnect). Pending requests are rejected. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      const wasOpen = this.state !== 'closed';
      this.state = 'closed';
      this.reconnector?.cancel();
      this.keepalive?.stop();
      const link = this.link;
      this.link = undefined;
      this.requests.failAll(new UnavailableError(`OpenFlow connection ${this.endpoint} was closed`));
      await link?.close();
      if (wasOpen) this.emit('closed');
    })());
  }

  // --- connecting ------------------------------------------------------------------------

  /** Dials, exchanges HELLOs, asks for features and re-applies packet-in settings. */
  private async open(): Promise<FeaturesReply> {
    const link = await OpenFlowLink.dial(
      this.endpoint,
      { target: this.target, timeoutMs: this.timeoutMs },
      {
        onMessage: (bytes, from) => this.inbound.receive(bytes, from),
        onClose: (failure, from) => this.onClose(from, failure),
      },
    );
    if (this.isClosed()) {
      link.destroy();
      throw new UnavailableError(`OpenFlow connection ${this.endpoint} was closed`);
    }
    const waiter = new HelloWaiter(this.endpoint, this.timeoutMs);
    this.helloWaiter = waiter;
    this.link = link;
    try {
      this.write([HELLO], [this.requests.allocateXid()]);
      checkVersion(await waiter.hello, this.endpoint, (error) => this.write([error], [this.requests.allocateXid()]));
      const features = await this.requests.transact({ type: 'FEATURES_REQUEST', xid: 0 });
      if (this.packetInConfig) await configurePacketIn(this.batches, this.packetInConfig);
      // close() may have been called while the handshake ran.
      if (this.isClosed()) throw new UnavailableError(`OpenFlow connection ${this.endpoint} was closed`);
      this.featuresReply = features;
      this.state = 'connected';
      this.startKeepalive(link);
      return features;
    } catch (error) {
      waiter.fail(error instanceof Error ? error : new Error(String(error)));
      if (this.helloWaiter === waiter) this.helloWaiter = undefined;
      if (this.link === link) this.link = undefined;
      // end(), not destroy(): a HELLO_FAILED error we wrote should reach the switch.
      link.end();
      throw error;
    }
  }

  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private startKeepalive(link: OpenFlowLink): void {
    this.keepalive = new Keepalive({
      intervalMs: this.echoIntervalMs,
      lastReceived: () => link.lastReceived,
      echo: () =>
        this.state === 'connected'
          ? this.requests.transact({ type: 'ECHO_REQUEST', xid: 0, data: new Uint8Array(0) })
          : undefined,
      onUnanswered: () => {
        // Still the same link, so not a loss: silence past the timeout. The switch is hung or the path is gone.
        if (link === this.link && this.state === 'connected')
          link.destroy(new Error(`no reply to ECHO_REQUEST within ${this.timeoutMs} ms`));
      },
    });
    this.keepalive.start();
  }

  private onClose(link: OpenFlowLink, failure: Error | undefined): void {
    if (link !== this.link) return; // an old link, or one open() already gave up
    this.link = undefined;
    this.keepalive?.stop();
    this.keepalive = undefined;
    const cause = failure ? (isSystemError(failure) ? failure.code : failure.message) : 'closed by the switch';
    const lost = new UnavailableError(`OpenFlow connection ${this.endpoint} lost: ${cause}`, {
      hint: 'is ovs-vswitchd running?',
      ...(failure ? { cause: failure } : {}),
    });
    this.helloWaiter?.fail(lost);
    this.helloWaiter = undefined;
    this.requests.failAll(lost);
    if (this.state !== 'connected') return; // open() is handling it, or close() was called
    this.emit('disconnected', lost);
    if (this.reconnector) {
      this.state = 'reconnecting';
      this.reconnector.start(lost);
    } else {
      this.state = 'closed';
      this.emit('closed');
    }
  }

  // --- sending ---------------------------------------------------------------------------

  private assertConnected(): void {
    if (this.state === 'connected' && this.link) return;
    const why = this.state === 'reconnecting' ? 'reconnecting' : this.state === 'connecting' ? 'connecting' : 'closed';
    throw new UnavailableError(`OpenFlow connection ${this.endpoint} is not connected (${why})`, {
      hint: 'is ovs-vswitchd running?',
    });
  }

  private write(messages: readonly OpenFlowMessage[], xids: readonly number[]): void {
    if (!this.link)
      throw new UnavailableError(`OpenFlow connection ${this.endpoint} is not connected`, {
        hint: 'is ovs-vswitchd running?',
      });
    this.link.write(messages, xids);
  }

  private async applyOne(message: OpenFlowMessage, options: RequestOptions): Promise<void> {
    const { errors } = await this.batch([message], options);
    const error = errors.get(0);
    if (error) throw error;
  }
}
