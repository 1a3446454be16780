/**
 * ofproto/trace's text and dpif/show's ports as trace reads them, the traced flow's text, and where ovs-vswitchd's
 * unixctl socket is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import {
  parseDatapathPorts,
  parseTrace,
  traceFlowText,
  vswitchdControlPath,
} from '../../src/adapters/ovs/ofproto-trace.js';
import { UnavailableError } from '../../src/errors.js';
import { groupAddress } from '../../src/wire/ip-address.js';

function trace(rule: string, actions: string): string {
  return [
    'Flow: udp,in_port=1,vlan_tci=0x0000,dl_src=02:00:00:00:6d:63,dl_dst=01:00:5e:01:02:03,nw_src=192.0.2.1,nw_dst=239.1.2.3,nw_tos=0,nw_ecn=0,nw_ttl=64',
    '',
    'bridge("br-int")',
    '----------------',
    rule,
    '    group:1',
    '     -> output:3',
    '',
    'Final flow: unchanged',
    'Megaflow: recirc_id=0,eth,ip,in_port=1,nw_dst=239.1.2.3,nw_frag=no',
    `Datapath actions: ${actions}`,
  ].join('\n');
}

const OUR_RULE = ' 0. ip,nw_dst=239.1.2.3, priority 200, cookie 0x6d63030000000000';

describe('parseTrace', () => {
  it('reads the datapath outputs and the first rule with its cookie', () => {
    const verdict = parseTrace(trace(OUR_RULE, '1,3'));
    assert.ok(verdict);
    assert.equal(verdict.datapathActions, '1,3');
    assert.deepEqual(verdict.datapathOutputs, [1, 3]);
    assert.deepEqual(verdict.firstRule, {
      table: 0,
      match: 'ip,nw_dst=239.1.2.3',
      priority: 200,
      cookie: 0x6d63030000000000n,
    });
  });

  it('"drop" outputs nothing', () => {
    const verdict = parseTrace(trace(OUR_RULE, 'drop'));
    assert.equal(verdict?.datapathActions, 'drop');
    assert.deepEqual(verdict?.datapathOutputs, []);
  });

  it('takes the ports inside set(...) and clone(...) wrappers, not their arguments, each once', () => {
    const verdict = parseTrace(
      trace(OUR_RULE, 'set(ipv4(ttl=63)),2,clone(set(eth(src=02:00:00:00:00:01)),5),push_vlan(vid=10,pcp=0),2'),
    );
    assert.deepEqual(verdict?.datapathOutputs, [2, 5]);
  });

  it('a catch-all rule " 0. priority 0" has an empty match and no cookie', () => {
    const verdict = parseTrace(trace(' 0. priority 0', 'drop'));
    assert.deepEqual(verdict?.firstRule, { table: 0, match: '', priority: 0 });
    assert.equal(verdict?.firstRule !== undefined && 'cookie' in verdict.firstRule, false);
  });

  it('reads the table number and only the first rule matched', () => {
    const text = trace(' 3. udp,in_port=4, priority 300, cookie 0xabc', '4').replace(
      '    group:1',
      '    resubmit(,5)\n 5. ip, priority 10, cookie 0x1\n    output:4',
    );
    assert.deepEqual(parseTrace(text)?.firstRule, { table: 3, match: 'udp,in_port=4', priority: 300, cookie: 0xabcn });
  });

  it('no rule matched: firstRule undefined', () => {
    const text = [
      'Flow: udp,in_port=1',
      '',
      'bridge("br-int")',
      '----------------',
      'No match.',
      '',
      'Datapath actions: drop',
    ].join('\n');
    const verdict = parseTrace(text);
    assert.ok(verdict);
    assert.equal(verdict.firstRule, undefined);
  });

  it('undefined for text without a "Datapath actions:" line', () => {
    assert.equal(parseTrace('ovs-vswitchd: no bridge named br-nope'), undefined);
    assert.equal(parseTrace(''), undefined);
  });
});

const DPIF_SHOW = [
  'netdev@ovs-netdev: hit:0 missed:0',
  '  br-int:',
  '    br-int 65534/1: (tap)',
  '    gw0 1/2: (tap)',
  '    mcl8fl0a1 2/3: (system)',
  '  br-ex:',
  '    br-ex 65534/4: (tap)',
  '    eth1 1/5: (system)',
  '',
].join('\n');

describe('parseDatapathPorts', () => {
  it("maps the bridge's datapath ports to OpenFlow ports, and not the other bridge's", () => {
    assert.deepEqual(
      [...parseDatapathPorts(DPIF_SHOW, 'br-int')],
      [
        [1, 65534],
        [2, 1],
        [3, 2],
      ],
    );
  });

  it('the second bridge is read on its own', () => {
    assert.deepEqual(
      [...parseDatapathPorts(DPIF_SHOW, 'br-ex')],
      [
        [4, 65534],
        [5, 1],
      ],
    );
  });

  it('an unknown bridge has no ports', () => {
    assert.equal(parseDatapathPorts(DPIF_SHOW, 'br-nope').size, 0);
  });
});

describe('traceFlowText', () => {
  it('IPv4: udp, nw_src/nw_dst, the 01:00:5e MAC of the group, the UDP ports', () => {
    const text = traceFlowText({ inPort: 7, group: groupAddress('239.129.2.3'), source: '10.0.0.5' });
    const fields = text.split(',');
    assert.equal(fields[0], 'udp');
    assert.ok(fields.includes('in_port=7'));
    assert.ok(fields.includes('nw_src=10.0.0.5'));
    assert.ok(fields.includes('nw_dst=239.129.2.3'));
    // Only the low 23 bits: 239.129.2.3 → 01:00:5e:01:02:03.
    assert.ok(fields.includes('dl_dst=01:00:5e:01:02:03'), text);
    assert.ok(fields.some((field) => /^udp_src=\d+$/.test(field)));
    assert.ok(fields.some((field) => /^udp_dst=\d+$/.test(field)));
    assert.ok(fields.includes('nw_ttl=64'));
    assert.ok(!text.includes('ipv6'));
  });

  it("IPv4 with the sender's MAC", () => {
    const text = traceFlowText({
      inPort: 1,
      group: groupAddress('239.1.2.3'),
      source: '10.0.0.5',
      sourceMac: '0a:58:0a:00:00:05',
    });
    assert.ok(text.split(',').includes('dl_src=0a:58:0a:00:00:05'));
  });

  it('IPv6: udp6, ipv6_src/ipv6_dst, the 33:33 MAC of the group', () => {
    const text = traceFlowText({ inPort: 2, group: groupAddress('ff3e::8000:1234'), source: '2001:db8::5' });
    const fields = text.split(',');
    assert.equal(fields[0], 'udp6');
    assert.ok(fields.includes('in_port=2'));
    assert.ok(fields.includes('ipv6_src=2001:db8::5'));
    assert.ok(fields.includes('ipv6_dst=ff3e::8000:1234'));
    assert.ok(fields.includes('dl_dst=33:33:80:00:12:34'), text);
    assert.ok(fields.some((field) => /^udp_dst=\d+$/.test(field)));
    assert.ok(!fields.some((field) => field.startsWith('nw_src=') || field.startsWith('nw_dst=')));
    // The hop limit is nw_ttl to OVS as the TTL is: ofproto/trace refuses any other name for it.
    assert.ok(fields.includes('nw_ttl=64'), text);
  });
});

describe('vswitchdControlPath', () => {
  let root: string;
  let counter = 0;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'mcastctl-vsctl-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const rundir = async (files: Record<string, string>): Promise<string> => {
    const dir = await mkdtemp(join(root, `r${++counter}-`));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    return dir;
  };

  it('the pidfile and ovs-vswitchd.<pid>.ctl: that socket', async () => {
    const dir = await rundir({ 'ovs-vswitchd.pid': '1234\n', 'ovs-vswitchd.1234.ctl': '', 'ovs-vswitchd.ctl': '' });
    assert.equal(await vswitchdControlPath(dir), join(dir, 'ovs-vswitchd.1234.ctl'));
  });

  it('only ovs-vswitchd.ctl: that socket', async () => {
    const dir = await rundir({ 'ovs-vswitchd.ctl': '' });
    assert.equal(await vswitchdControlPath(dir), join(dir, 'ovs-vswitchd.ctl'));
  });

  it('a pidfile whose socket is gone falls back to ovs-vswitchd.ctl', async () => {
    const dir = await rundir({ 'ovs-vswitchd.pid': '99\n', 'ovs-vswitchd.ctl': '' });
    assert.equal(await vswitchdControlPath(dir), join(dir, 'ovs-vswitchd.ctl'));
  });

  it('a pidfile that is a FIFO, a device or too long is no pid: ovs-vswitchd.ctl, at once', async () => {
    for (const make of [
      (path: string) => execFileSync('mkfifo', [path]),
      (path: string) => symlinkSync('/dev/zero', path),
      (path: string) => writeFileSync(path, '7'.repeat(100_000)),
    ]) {
      const dir = await rundir({ 'ovs-vswitchd.ctl': '' });
      make(join(dir, 'ovs-vswitchd.pid'));
      const started = Date.now();
      assert.equal(await vswitchdControlPath(dir), join(dir, 'ovs-vswitchd.ctl'));
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
    }
  });

  it('neither: UnavailableError naming the rundir', async () => {
    const dir = await rundir({ 'ovs-vswitchd.pid': '1234\n' });
    await assert.rejects(
      vswitchdControlPath(dir),
      (error: unknown) => error instanceof UnavailableError && error.exitCode === 69 && error.message.includes(dir),
    );
    await assert.rejects(vswitchdControlPath(join(root, 'missing')), UnavailableError);
  });

  it('a pidfile that is not a pid is not used to build a path', async () => {
    const plain = await rundir({ 'ovs-vswitchd.pid': 'abc', 'ovs-vswitchd.abc.ctl': '' });
    await assert.rejects(vswitchdControlPath(plain), UnavailableError);
  });
});
