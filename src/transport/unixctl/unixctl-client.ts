/**
 * A client of an OVS daemon's unixctl socket (what `ovs-appctl` speaks): JSON-RPC 1.0
 * over a Unix socket, the same framing as OVSDB's (so the same connection), a request a
 * command: `{"method": "ofproto/trace", "params": ["br-int", "in_port=1,..."], "id": 1}`.
 * The daemon answers with the command's text output as `result`, or its complaint as
 * `error`, a string either way.
 *
 * One connection, no reconnection: a unixctl call is a one-shot question.
 */
import { McastError, UnavailableError } from '../../errors.js';
import { RequestTable } from '../../runtime/request-table.js';
import { RpcConnection } from '../ovsdb/connection.js';
import type { RpcErrorReply, RpcMessage, RpcResult } from '../../protocol/ovsdb/rpc.js';
import { parseEndpoint } from '../../wire/endpoint.js';

/**
 * An answer of the daemon that is an error: the command exists but refused (a bad flow, no such bridge), or is unknown.
 */
export class UnixctlCommandError extends McastError {
  override readonly name = 'UnixctlCommandError';
  constructor(
    readonly command: string,
    readonly reply: string,
  ) {
    super('refused', `${command}: ${reply.trim()}`);
  }
}

export interface UnixctlClientOptions {
  /** The socket's path (`<rundir>/ovs-vswitchd.<pid>.ctl`). */
  readonly path: string;
  /** Of the connect and of each call (default 10 s). */
  readonly timeoutMs?: number;
  /** The program behind the socket, for messages (default ovs-vswitchd). */
  readonly program?: string;
}

export class UnixctlClient {
  private readonly pending = new RequestTable<string, RpcResult | RpcErrorReply>();

  private constructor(
    private readonly connection: RpcConnection,
    private readonly timeoutMs: number,
    private readonly program: string,
  ) {}

  /** Connects; UnavailableError (69) when nothing listens, PermissionError (77) when the socket refuses this user. */
  static async connect(options: UnixctlClientOptions): Promise<UnixctlClient> {
    const program = options.program ?? 'ovs-vswitchd';
    const timeoutMs = options.timeoutMs ?? 10_000;
    let client: UnixctlClient | undefined;
    const connection = await RpcConnection.open({
      endpoint: parseEndpoint(options.path, `${program} control socket`),
      connectTimeoutMs: timeoutMs,
      service: {
        name: `${program}'s control socket`,
        unavailableHint: `is ${program} running? set OVS_RUNDIR or --ovs-rundir`,
      },
      onMessage: (message) => client?.onMessage(message),
      onClose: (error) => client?.onClose(error),
    });
    client = new UnixctlClient(connection, timeoutMs, program);
    return client;
  }

  /**
   * Runs `command` with `args`; resolves with its text output, rejects with UnixctlCommandError when the daemon refuses
   * it.
   */
  call(command: string, args: readonly string[]): Promise<string> {
    if (!this.connection.isOpen)
      return Promise.reject(new UnavailableError(`${this.program}'s control socket closed before ${command}`));
    return this.pending.start({
      meta: command,
      timeoutMs: this.timeoutMs,
      timeoutError: () => new UnavailableError(`${this.program} did not answer ${command} within ${this.timeoutMs} ms`),
      accept: (reply) => {
        if (reply.kind === 'error')
          throw new UnixctlCommandError(
            command,
            typeof reply.error === 'string' ? reply.error : JSON.stringify(reply.error),
          );
        if (typeof reply.result !== 'string')
          throw new UnixctlCommandError(
            command,
            `an answer that is not text: ${JSON.stringify(reply.result).slice(0, 200)}`,
          );
        return reply.result;
      },
      send: (id) => this.connection.send({ kind: 'request', method: command, params: [...args], id }),
    });
  }

  close(): void {
    this.connection.close();
  }

  private onMessage(message: RpcMessage): void {
    if ((message.kind === 'result' || message.kind === 'error') && typeof message.id === 'number')
      this.pending.settle(message.id, message);
  }

  private onClose(error: Error | undefined): void {
    this.pending.failAll(
      (command) =>
        new UnavailableError(
          `${this.program}'s control socket closed during ${command}${error === undefined ? '' : `: ${error.message}`}`,
        ),
    );
  }
}
