/** Service endpoints and where OVS is found (flags, OVS_RUNDIR, defaults). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/errors.js';
import { resolveOvsTarget } from '../../src/ovs/locations.js';
import { parseEndpoint } from '../../src/wire/endpoint.js';

describe('endpoints', () => {
  it('parses unix:, tcp: (IPv4, names, bracketed IPv6) and bare absolute paths', () => {
    assert.deepEqual(parseEndpoint('unix:/run/ovs/db.sock', 'OVSDB'), { kind: 'unix', path: '/run/ovs/db.sock', text: 'unix:/run/ovs/db.sock' });
    assert.deepEqual(parseEndpoint('/run/ovs/db.sock', 'OVSDB'), { kind: 'unix', path: '/run/ovs/db.sock', text: 'unix:/run/ovs/db.sock' });
    assert.deepEqual(parseEndpoint('tcp:127.0.0.1:6640', 'OVSDB'), { kind: 'tcp', host: '127.0.0.1', port: 6640, text: 'tcp:127.0.0.1:6640' });
    assert.deepEqual(parseEndpoint('tcp:ovs.example:6640', 'OVSDB'), { kind: 'tcp', host: 'ovs.example', port: 6640, text: 'tcp:ovs.example:6640' });
    assert.deepEqual(parseEndpoint('tcp:[::1]:6640', 'OVSDB'), { kind: 'tcp', host: '::1', port: 6640, text: 'tcp:[::1]:6640' });
  });
  it('refuses anything else with bad-address, naming the service', () => {
    for (const text of ['', 'unix:', 'db.sock', 'punix:/x', 'tcp:1.2.3.4', 'tcp:1.2.3.4:0', 'tcp:1.2.3.4:70000', 'tcp:::1:6640', 'tcp:[nope]:1']) {
      assert.throws(() => parseEndpoint(text, 'OVSDB'), (error) => error instanceof UsageError && error.code === 'bad-address' && /^bad OVSDB address/.test(error.message), text);
    }
  });
});

describe('where OVS is', () => {
  it('defaults to /var/run/openvswitch and br-int', () => {
    assert.deepEqual(resolveOvsTarget({}, {}), { bridge: 'br-int', db: 'unix:/var/run/openvswitch/db.sock', openflow: 'unix:/var/run/openvswitch/br-int.mgmt' });
  });
  it('follows OVS_RUNDIR, then --ovs-rundir, then --db and --openflow', () => {
    assert.deepEqual(resolveOvsTarget({ bridge: 'br0' }, { OVS_RUNDIR: '/tmp/ovs/' }), { bridge: 'br0', db: 'unix:/tmp/ovs/db.sock', openflow: 'unix:/tmp/ovs/br0.mgmt' });
    assert.equal(resolveOvsTarget({ ovsRundir: '/x' }, { OVS_RUNDIR: '/tmp/ovs' }).db, 'unix:/x/db.sock');
    assert.deepEqual(resolveOvsTarget({ db: 'tcp:127.0.0.1:6640', openflow: '/r/br-int.mgmt' }, {}), { bridge: 'br-int', db: 'tcp:127.0.0.1:6640', openflow: 'unix:/r/br-int.mgmt' });
  });
  it('refuses a bad bridge name or endpoint', () => {
    assert.throws(() => resolveOvsTarget({ bridge: 'a/b' }, {}), UsageError);
    assert.throws(() => resolveOvsTarget({ bridge: 'a-very-long-bridge-name' }, {}), UsageError);
    assert.throws(() => resolveOvsTarget({ db: 'ssl:1.2.3.4:6640' }, {}), /bad OVSDB \(--db\) address/);
  });
});
