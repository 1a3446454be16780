/** Service endpoints and where OVS is found (flags, OVS_RUNDIR, defaults). */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { ExitCode, PermissionError, UnavailableError, UsageError } from '../../src/errors.js';
import { resolveOvsTarget } from '../../src/adapters/ovs/locations.js';
import { connectFailure, parseEndpoint, type Endpoint } from '../../src/wire/endpoint.js';

describe('endpoints', () => {
  it('parses unix:, tcp: (IPv4, names, bracketed IPv6) and bare absolute paths', () => {
    assert.deepEqual(parseEndpoint('unix:/run/ovs/db.sock', 'OVSDB'), {
      kind: 'unix',
      path: '/run/ovs/db.sock',
      text: 'unix:/run/ovs/db.sock',
    });
    assert.deepEqual(parseEndpoint('/run/ovs/db.sock', 'OVSDB'), {
      kind: 'unix',
      path: '/run/ovs/db.sock',
      text: 'unix:/run/ovs/db.sock',
    });
    assert.deepEqual(parseEndpoint('tcp:127.0.0.1:6640', 'OVSDB'), {
      kind: 'tcp',
      host: '127.0.0.1',
      port: 6640,
      text: 'tcp:127.0.0.1:6640',
    });
    assert.deepEqual(parseEndpoint('tcp:ovs.example:6640', 'OVSDB'), {
      kind: 'tcp',
      host: 'ovs.example',
      port: 6640,
      text: 'tcp:ovs.example:6640',
    });
    assert.deepEqual(parseEndpoint('tcp:[::1]:6640', 'OVSDB'), {
      kind: 'tcp',
      host: '::1',
      port: 6640,
      text: 'tcp:[::1]:6640',
    });
  });
  it('refuses anything else with bad-address, naming the service', () => {
    for (const text of [
      '',
      'unix:',
      'db.sock',
      'punix:/x',
      'tcp:1.2.3.4',
      'tcp:1.2.3.4:0',
      'tcp:1.2.3.4:70000',
      'tcp:::1:6640',
      'tcp:[nope]:1',
    ]) {
      assert.throws(
        () => parseEndpoint(text, 'OVSDB'),
        (error) =>
          error instanceof UsageError && error.code === 'bad-address' && /^bad OVSDB address/.test(error.message),
        text,
      );
    }
  });
  it('takes a host that looks like a number only as a dotted-quad IPv4 address', () => {
    assert.equal(parseEndpoint('tcp:192.0.2.255:6640', 'OVSDB').text, 'tcp:192.0.2.255:6640');
    // The resolver would look 999.1.1.1 up as a name (exit 69 after a DNS wait), and read
    // 1.2.3 as 1.2.0.3 and 0x7f.1 as 127.0.0.1.
    for (const host of [
      '999.1.1.1',
      '1.2.3',
      '1.2.3.4.5',
      '01.2.3.4',
      '1..2.3',
      '.1.2.3',
      '1.2.3.4.',
      '0x7f.1',
      '0x7f000001',
      'a.0x1',
      'ovs.1',
    ]) {
      assert.throws(() => parseEndpoint(`tcp:${host}:6640`, 'OVSDB'), /is not an IPv4 address/, host);
    }
  });
  it('takes host names of letters, digits and - in labels, at most 253 characters', () => {
    const longest = Array.from({ length: 4 }, () => 'a'.repeat(63))
      .join('.')
      .slice(0, 253);
    for (const host of ['localhost', 'ovs-1.example', 'A1.b2', longest, `${'x'.repeat(63)}.example`]) {
      assert.equal(parseEndpoint(`tcp:${host}:1`, 'OpenFlow').kind, 'tcp', host);
    }
    for (const host of [
      'bad_host',
      'a b',
      'a..b',
      '-a.b',
      'a-.b',
      'a.b.',
      `${'x'.repeat(64)}.example`,
      `${longest}a`,
      'ö.example',
      'a!',
      'a%b',
    ]) {
      assert.throws(
        () => parseEndpoint(`tcp:${host}:1`, 'OpenFlow'),
        /^UsageError: bad OpenFlow address .*is neither an IPv4 address nor a host name/,
        host,
      );
    }
  });
  it('checks bracketed IPv6 addresses and their zone', () => {
    assert.equal(parseEndpoint('tcp:[fe80::1%eth0]:6653', 'OpenFlow').kind, 'tcp');
    assert.equal(parseEndpoint('tcp:[::ffff:192.0.2.1]:6653', 'OpenFlow').kind, 'tcp');
    for (const host of ['1::2::3', '192.0.2.1', 'fe80::1%', 'fe80::1%a b', `fe80::1%${'x'.repeat(16)}`, 'localhost']) {
      assert.throws(() => parseEndpoint(`tcp:[${host}]:6653`, 'OpenFlow'), /is not an IPv6 address/, host);
    }
  });
  it('refuses a port of 0, above 65535 or not digits', () => {
    for (const port of ['0', '65536', '99999999999999999999', '-1', '+1', '6640x', '0x10', '１']) {
      assert.throws(() => parseEndpoint(`tcp:192.0.2.1:${port}`, 'OVSDB'), UsageError, port);
    }
    assert.equal(parseEndpoint('tcp:192.0.2.1:65535', 'OVSDB').kind, 'tcp');
  });
  it('refuses a socket path that no sockaddr_un can hold', () => {
    const longest = `/${'a'.repeat(106)}`;
    assert.equal(parseEndpoint(`unix:${longest}`, 'OVSDB').kind, 'unix');
    assert.throws(
      () => parseEndpoint(`unix:${longest}a`, 'OVSDB'),
      /108 octets long; a unix socket address holds at most 107/,
    );
    assert.throws(() => parseEndpoint(`${longest}a`, 'OVSDB'), /108 octets long/);
    assert.throws(() => parseEndpoint(`/${'é'.repeat(54)}`, 'OVSDB'), /109 octets long/);
    assert.throws(() => parseEndpoint('unix:/a\0b', 'OVSDB'), /NUL/);
  });
  it("quotes at most a bounded prefix of the user's text", () => {
    const long = (c: string) => c.repeat(10_000);
    for (const text of [
      `tcp:${long('1')}:1`,
      `tcp:${long('a')}:1`,
      `tcp:1.2.3.4:${long('9')}`,
      `unix:/${long('a')}`,
      long('x'),
    ]) {
      assert.throws(
        () => parseEndpoint(text, 'OVSDB'),
        (error) =>
          error instanceof UsageError && error.message.length < 400 && /\(10,?\d{3} characters\)/.test(error.message),
        text.slice(0, 20),
      );
    }
  });
});

describe('a failed connect, the same for every service', () => {
  const unix = parseEndpoint('unix:/run/x.sock', 'OpenFlow');
  const tcp = parseEndpoint('tcp:ovs.example:6640', 'OVSDB');
  const fail = (endpoint: Endpoint, reason: string) =>
    connectFailure(endpoint, 'OpenFlow', reason, { unavailableHint: 'is it running?' });
  it('EACCES and EPERM are PermissionError (77) with a hint', () => {
    for (const reason of ['EACCES', 'EPERM']) {
      const error = fail(unix, reason);
      assert.ok(error instanceof PermissionError);
      assert.equal(error.exitCode, ExitCode.NoPermission);
      assert.equal(error.message, `cannot connect to OpenFlow unix:/run/x.sock: ${reason}`);
      assert.equal(error.hint, 'run as root, or as a user the socket lets in');
      assert.match(fail(tcp, reason).hint ?? '', /firewall/);
    }
  });
  it('a host name that does not exist is a usage error (64); the rest are UnavailableError (69)', () => {
    const missing = fail(tcp, 'ENOTFOUND');
    assert.ok(missing instanceof UsageError);
    assert.equal(missing.code, 'bad-address');
    for (const reason of ['ENOENT', 'ECONNREFUSED', 'EAI_AGAIN', 'no answer within 10 ms']) {
      const error = fail(unix, reason);
      assert.ok(error instanceof UnavailableError, reason);
      assert.equal(error.hint, 'is it running?');
    }
  });
});

describe('where OVS is', () => {
  it('defaults to /var/run/openvswitch and br-int', () => {
    assert.deepEqual(resolveOvsTarget({}, {}), {
      bridge: 'br-int',
      db: 'unix:/var/run/openvswitch/db.sock',
      openflow: 'unix:/var/run/openvswitch/br-int.mgmt',
    });
  });
  it('follows OVS_RUNDIR, then --ovs-rundir, then --db and --openflow', () => {
    assert.deepEqual(resolveOvsTarget({ bridge: 'br0' }, { OVS_RUNDIR: '/tmp/ovs/' }), {
      bridge: 'br0',
      db: 'unix:/tmp/ovs/db.sock',
      openflow: 'unix:/tmp/ovs/br0.mgmt',
    });
    assert.equal(resolveOvsTarget({ ovsRundir: '/x' }, { OVS_RUNDIR: '/tmp/ovs' }).db, 'unix:/x/db.sock');
    assert.deepEqual(resolveOvsTarget({ db: 'tcp:127.0.0.1:6640', openflow: '/r/br-int.mgmt' }, {}), {
      bridge: 'br-int',
      db: 'tcp:127.0.0.1:6640',
      openflow: 'unix:/r/br-int.mgmt',
    });
  });
  it('refuses a bad bridge name or endpoint', () => {
    assert.throws(() => resolveOvsTarget({ bridge: 'a/b' }, {}), UsageError);
    assert.throws(() => resolveOvsTarget({ bridge: 'a-very-long-bridge-name' }, {}), UsageError);
    assert.throws(() => resolveOvsTarget({ db: 'ssl:1.2.3.4:6640' }, {}), /bad OVSDB \(--db\) address/);
  });
});
