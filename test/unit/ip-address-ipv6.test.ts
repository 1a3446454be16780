/**
 * The domain's typed addresses with IPv6: the family of text, the multicast and link-scope
 * tests, the parsers' RFC 5952 canonical text and what each refuses, and the one address
 * order (IPv4 before IPv6, IPv6 by its octets), whose sort key must agree with it.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import {
  addressFamily,
  addressOrderKey,
  compareAddresses,
  compareOrderKeys,
  groupAddress,
  isLinkScopeGroup,
  isMulticast,
  parseGroupAddress,
  parseHostAddress,
  parseSourceAddress,
  sourceAddress,
} from '../../src/wire/ip-address.js';

describe('IPv6 addresses: family and kind', () => {
  it('addressFamily tells IPv4 from IPv6, and no address from either', () => {
    assert.equal(addressFamily('239.1.2.3'), 'ipv4');
    assert.equal(addressFamily('0.0.0.0'), 'ipv4');
    assert.equal(addressFamily('ff3e::8000:1'), 'ipv6');
    assert.equal(addressFamily('::'), 'ipv6');
    assert.equal(addressFamily('::ffff:10.0.0.1'), 'ipv6');
    for (const text of [
      '',
      'ff3e:::1',
      '1:2:3:4:5:6:7:8:9',
      'fe80::1%eth0',
      '[::1]',
      '2001:db8::/32',
      '239.1.2',
      'g::1',
      'host',
    ]) {
      assert.equal(addressFamily(text), undefined, text);
    }
  });

  it('isMulticast is ff00::/8', () => {
    for (const text of ['ff02::1', 'ff3e::8000:1', 'FF05::1', 'ff00::']) assert.equal(isMulticast(text), true, text);
    for (const text of ['fe80::1', '2001:db8::5', '::', '::1', 'fe00::', 'ff3e:::1'])
      assert.equal(isMulticast(text), false, text);
  });

  it('isLinkScopeGroup: interface-local and link-local scope, flagged or not; wider scopes are not', () => {
    for (const text of [
      'ff02::1',
      'ff02::2',
      'ff02::16',
      'ff02::1:ff00:1',
      'ff12::5',
      'ff32::1',
      'ff01::1',
      'ff11::1',
    ]) {
      assert.equal(isLinkScopeGroup(text), true, text);
    }
    for (const text of [
      'ff05::1',
      'ff08::1',
      'ff0e::1',
      'ff3e::8000:1',
      'ff15::1',
      'fe80::1',
      '2001:db8::5',
      'ff02:::1',
    ]) {
      assert.equal(isLinkScopeGroup(text), false, text);
    }
    // The IPv4 rule is unchanged: 224.0.0.0/24 only.
    assert.equal(isLinkScopeGroup('224.0.0.22'), true);
    assert.equal(isLinkScopeGroup('224.0.1.1'), false);
  });
});

describe('IPv6 addresses: the parsers', () => {
  it('return RFC 5952 canonical text: lower case, no leading zeros, the longest zero run as ::', () => {
    assert.equal(parseGroupAddress('FF3E:0:0::1'), 'ff3e::1');
    assert.equal(parseGroupAddress('ff3e:0000:0000:0000:0000:0000:8000:0001'), 'ff3e::8000:1');
    assert.equal(parseGroupAddress('ff02:0:0:0:0:1:ff00:1'), 'ff02::1:ff00:1');
    assert.equal(parseHostAddress('FE80:0:0:0:0:0:0:1'), 'fe80::1');
    assert.equal(parseHostAddress('0:0:0:0:0:0:0:0'), '::');
    assert.equal(parseSourceAddress('2001:DB8:0:0:1:0:0:5'), '2001:db8::1:0:0:5', 'the first of equal runs');
    assert.equal(parseSourceAddress('2001:db8:0:1:1:1:1:1'), '2001:db8:0:1:1:1:1:1', 'one zero group stays');
    assert.equal(parseSourceAddress('::ffff:10.0.0.5'), '::ffff:10.0.0.5', 'IPv4-mapped ends in its dotted quad');
    assert.equal(groupAddress('FF3E::8000:0001'), 'ff3e::8000:1');
    assert.equal(sourceAddress('2001:0db8::0005'), '2001:db8::5');
  });

  it('equal addresses are equal strings, whatever text they came as', () => {
    const forms = ['ff3e::8000:1', 'FF3E::8000:1', 'ff3e:0:0:0:0:0:8000:1', 'ff3e:0000::0:8000:0001'];
    assert.deepEqual(new Set(forms.map((text) => parseGroupAddress(text))), new Set(['ff3e::8000:1']));
  });

  it('a group is multicast; a host is anything else, :: included; a source is unicast and not ::', () => {
    assert.equal(parseGroupAddress('fe80::1'), undefined);
    assert.equal(parseGroupAddress('2001:db8::5'), undefined);
    assert.equal(parseGroupAddress('::'), undefined);
    assert.equal(parseHostAddress('::'), '::', 'a host that reported without an address');
    assert.equal(parseHostAddress('ff02::1'), undefined);
    assert.equal(parseHostAddress('ff3e::8000:1'), undefined);
    assert.equal(parseSourceAddress('::'), undefined, ':: is a host, never a source');
    assert.equal(parseSourceAddress('ff3e::8000:1'), undefined);
    assert.equal(parseSourceAddress('ff02::1'), undefined);
    assert.equal(parseSourceAddress('fe80::1'), 'fe80::1');
    for (const bad of ['ff3e:::1', 'fe80::1%eth0', '2001:db8::5/128', '[2001:db8::5]', '1::2::3', ':1::2', '1::2:']) {
      assert.equal(parseGroupAddress(bad), undefined, bad);
      assert.equal(parseHostAddress(bad), undefined, bad);
      assert.equal(parseSourceAddress(bad), undefined, bad);
    }
    assert.throws(() => groupAddress('fe80::1'), RangeError);
    assert.throws(() => sourceAddress('::'), RangeError);
  });
});

describe('IPv6 addresses: the one order', () => {
  it('IPv4 before IPv6, IPv6 by its octets, text that is no address last', () => {
    const sorted = [
      'not-an-address',
      'ff05::1',
      '2001:db8::5',
      'ff02::10',
      '239.1.2.3',
      'ff02::2',
      '10.0.0.10',
      '::',
      '10.0.0.9',
      'ff3e::8000:1',
    ].sort(compareAddresses);
    assert.deepEqual(sorted, [
      '10.0.0.9',
      '10.0.0.10',
      '239.1.2.3',
      '::',
      '2001:db8::5',
      'ff02::2',
      'ff02::10',
      'ff05::1',
      'ff3e::8000:1',
      'not-an-address',
    ]);
    assert.ok(compareAddresses('ff02::2', 'ff02::10') < 0, 'by value, not by text');
    assert.ok(compareAddresses('ff02::10', 'ff05::1') < 0);
    assert.ok(compareAddresses('255.255.255.255', '::') < 0, 'every IPv4 address before every IPv6 one');
    assert.equal(compareAddresses('FF3E::1', 'ff3e:0::1'), 0, 'the same address in two texts');
  });

  const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((octets) => octets.join('.'));
  const ipv6 = fc
    .oneof(
      fc.uint8Array({ minLength: 16, maxLength: 16 }),
      // Few distinct values, so that equal and near addresses (shared prefixes, zero runs) come up.
      fc
        .array(fc.constantFrom(0, 1, 0xff, 0x80), { minLength: 16, maxLength: 16 })
        .map((octets) => Uint8Array.from(octets)),
    )
    .chain((octets) => {
      const groups = Array.from({ length: 8 }, (_, i) => ((octets[2 * i]! << 8) | octets[2 * i + 1]!).toString(16));
      // The full form, and its canonical form: the same address in two texts.
      return fc.constantFrom(
        groups.join(':'),
        parseHostAddress(groups.join(':')) ?? parseGroupAddress(groups.join(':'))!,
      );
    });
  const anyText = fc.oneof(ipv4, ipv6, fc.constantFrom('', 'host', 'ff3e:::1', '239.1.2'));

  it('addressOrderKey with compareOrderKeys sorts as compareAddresses does (property)', () => {
    const sign = (value: number) => Math.sign(value);
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        assert.equal(sign(compareOrderKeys(addressOrderKey(a), addressOrderKey(b))), sign(compareAddresses(a, b)));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.array(anyText, { maxLength: 30 }), (texts) => {
        const byKey = texts
          .map((text) => ({ text, key: addressOrderKey(text) }))
          .sort((x, y) => compareOrderKeys(x.key, y.key))
          .map((entry) => addressOrderKey(entry.text));
        const byCompare = [...texts].sort(compareAddresses).map(addressOrderKey);
        assert.deepEqual(byKey, byCompare);
      }),
      { numRuns: 500 },
    );
  });

  it('compareAddresses is a total order: antisymmetric and transitive (property)', () => {
    fc.assert(
      fc.property(anyText, anyText, anyText, (a, b, c) => {
        assert.equal(Math.sign(compareAddresses(a, b)) + Math.sign(compareAddresses(b, a)), 0);
        if (compareAddresses(a, b) <= 0 && compareAddresses(b, c) <= 0) assert.ok(compareAddresses(a, c) <= 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('IPv6 orders by its octets (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        (x, y) => {
          const text = (octets: Uint8Array) =>
            Array.from({ length: 8 }, (_, i) => ((octets[2 * i]! << 8) | octets[2 * i + 1]!).toString(16)).join(':');
          const byOctets = Math.sign(Buffer.compare(Buffer.from(x), Buffer.from(y)));
          assert.equal(Math.sign(compareAddresses(text(x), text(y))), byOctets);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
