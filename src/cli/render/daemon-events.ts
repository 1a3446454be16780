/**
 * `snoop --daemon`'s human lines: one per event of the daemon's stream (the --json form is
 * the event itself). A type this version does not know is shown as its JSON, not dropped.
 */
import type { ChalkInstance } from 'chalk';
import type { FrameEventRecord } from '../../packet/frame-event-record.js';
import type { DaemonEvent, PeerMessageParties, PortView } from '../../transport/control/daemon-view.js';
import { formatClock, recordTypeLabel } from './human-format.js';

/** One human line per daemon event: time, type, port (and pod), group, host, details. */
export function formatDaemonEvent(event: DaemonEvent, style: ChalkInstance): string {
  const time = Date.parse(event.time);
  const head = `${Number.isNaN(time) ? event.time : formatClock(time / 1000)} ${event.type.padEnd(6)}`;
  switch (event.type) {
    case 'igmp':
      return `${head} ${event.port === null ? '(no port)' : describeEventPort(event.port)}  ${describeIgmpRecord(event.record, style)}`;
    case 'join':
      return `${head} ${describeEventPort(event.port)}  ${style.green(event.group)} host ${event.host}`;
    case 'leave':
      return `${head} ${describeEventPort(event.port)}  ${style.yellow(event.group)} host ${event.host} (${event.reason})`;
    case 'sync': {
      const result = event.ok
        ? style.green('ok')
        : style.red(`failed${event.error === undefined ? '' : `: ${event.error}`}`);
      const sources = (event.sources ?? [])
        .map((entry) => `; ${entry.source} → ${describePortNumbers(entry.ports)}`)
        .join('');
      return `${head} ${event.group} ports ${describePortNumbers(event.ports)}${sources} in ${event.latencyMs.toFixed(1)} ms: ${result}`;
    }
    case 'route':
      return `${head} ${event.action} (${event.source}, ${event.group}) iif ${event.iif} oifs ${event.oifs.length === 0 ? 'none' : event.oifs.join(',')}`;
    case 'replay':
      return `${head} ${event.what} reconnected: ${event.groups} group${event.groups === 1 ? '' : 's'} replayed`;
    case 'refused':
      return `${head} ${describeEventPort(event.port)}  ${style.red(event.group)} join denied by the group policy${event.rule === undefined ? '' : ` (rule at line ${event.rule})`}`;
    case 'peer-report': {
      const records = event.records.map((record) => `${record.group} ${recordTypeLabel(record.type)}`).join('; ');
      return `${head} ${describePeers(event)}: ${records === '' ? '(no records)' : style.green(records)}`;
    }
    case 'peer-query':
      return `${head} ${describePeers(event)}: ${style.cyan('general')}`;
    default: {
      // A newer daemon's event type: shown, not dropped.
      const unknown = event as { type: unknown };
      return `${head} ${JSON.stringify(unknown)}`;
    }
  }
}

/** `in from PEER` or `out to PEER, PEER...` (one outgoing message, every peer it went to). */
function describePeers(event: PeerMessageParties): string {
  return event.direction === 'in' ? `in  from ${event.peer}` : `out to ${event.peers.join(', ')}`;
}

function describePortNumbers(ports: readonly number[]): string {
  return ports.length === 0 ? 'none' : ports.join(',');
}

function describeEventPort(port: PortView): string {
  return `${port.name} (${port.ofport})${port.pod === undefined ? '' : ` ${port.pod}`}`;
}

/** The `igmp` event's record is snoop --json's line for the message (a newer daemon's may hold more). */
function describeIgmpRecord(record: FrameEventRecord, style: ChalkInstance): string {
  const from = record.src === null ? '' : ` from ${record.src}`;
  if (record.error !== undefined) return style.red(`malformed (${record.error})${from}: ${record.message ?? ''}`);
  const version = record.version === undefined ? '' : `v${record.version} `;
  const group = record.group ?? '?';
  switch (record.type) {
    case 'report': {
      if (record.records !== undefined) {
        const records = record.records
          .map((item) => `${item.group} ${recordTypeLabel(item.type)} {${item.sources.join(', ')}}`)
          .join('; ');
        return `${style.green(`${version}report`)}${from}: ${records || '(no records)'}`;
      }
      return `${style.green(`${version}report`)}${from}: ${group}`;
    }
    case 'leave':
      return `${style.yellow(`${version}leave`)}${from}: ${group}`;
    case 'query':
      return `${style.cyan(`${version}query`)}${from}: ${group === '0.0.0.0' ? 'general' : group}`;
    case 'other':
      return style.magenta(`IGMP type ${String(record.igmpType)}${from}`);
    default:
      return JSON.stringify(record);
  }
}
