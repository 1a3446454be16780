/** The declared-state file: what it accepts, and that every refusal names the line. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/errors.js';
import { parseDeclaredState } from '../../src/state/declared-state.js';

describe('declared state file', () => {
  it('reads YAML with port names and numbers', () => {
    const text = ['# static groups', 'groups:', '  - group: 239.1.2.3', '    ports: [pod-a, 7]', '  - {group: 232.1.1.1, ports: ["pod-b"]}', ''].join('\n');
    const state = parseDeclaredState(text, 'groups.yaml');
    assert.deepEqual(
      state.groups.map((g) => [g.group, g.ports, g.where()]),
      [
        ['239.1.2.3', [{ name: 'pod-a' }, { ofport: 7 }], 'groups.yaml:3'],
        ['232.1.1.1', [{ name: 'pod-b' }], 'groups.yaml:5'],
      ],
    );
  });
  it('reads static kernel routes', () => {
    const state = parseDeclaredState('routes:\n  - {group: 239.1.2.3, source: 10.0.0.5, iif: eth0, oifs: [gw0, eth1]}\n', 'g.yaml');
    assert.deepEqual(
      state.routes.map((r) => [r.group, r.source, r.iif, r.oifs, r.where()]),
      [['239.1.2.3', '10.0.0.5', 'eth0', ['gw0', 'eth1'], 'g.yaml:2']],
    );
    assert.deepEqual(state.groups, []);
  });
  it('reads JSON', () => {
    assert.deepEqual(parseDeclaredState('{"groups": [{"group": "239.1.2.3", "ports": ["p1", 2]}]}', 'g.json').groups[0]?.ports, [{ name: 'p1' }, { ofport: 2 }]);
  });
  it('an empty file or an empty list declares nothing', () => {
    assert.deepEqual(parseDeclaredState('', 'g.yaml').groups, []);
    assert.deepEqual(parseDeclaredState('groups: []\n', 'g.yaml').groups, []);
  });
  const refusals: [string, string, RegExp][] = [
    ['YAML syntax', 'groups:\n  - group: 239.1.2.3\n    ports: [a\n', /^g\.yaml:4: not valid YAML or JSON/],
    ['an unknown top-level key', 'groups: []\ngroop: []\n', /^g\.yaml:2: unknown key "groop"/],
    ['an unknown key in a group', 'groups:\n  - group: 239.1.2.3\n    portz: [a]\n', /^g\.yaml:3: unknown key "portz"/],
    ['a unicast group', 'groups:\n  - group: 10.0.0.1\n    ports: [a]\n', /^g\.yaml:2: 10\.0\.0\.1 is not a multicast address/],
    ['a link-local group', 'groups:\n  - group: 224.0.0.251\n    ports: [a]\n', /^g\.yaml:2: 224\.0\.0\.251 is link-local/],
    ['not an address', 'groups:\n  - group: 239.1.2\n    ports: [a]\n', /^g\.yaml:2: "239\.1\.2" is not an IPv4 address/],
    ['no ports', 'groups:\n  - group: 239.1.2.3\n', /^g\.yaml:2: group 239\.1\.2\.3 needs "ports"/],
    ['an empty port list', 'groups:\n  - group: 239.1.2.3\n    ports: []\n', /^g\.yaml:3: "ports" must be a non-empty list/],
    ['port 0', 'groups:\n  - group: 239.1.2.3\n    ports: [0]\n', /^g\.yaml:3: port 0 is not an OpenFlow port number/],
    ['a group twice', 'groups:\n  - {group: 239.1.2.3, ports: [a]}\n  - {group: 239.1.2.3, ports: [b]}\n', /^g\.yaml:3: group 239\.1\.2\.3 is declared twice \(first at line 2\)/],
    ['not a mapping', '- 239.1.2.3\n', /^g\.yaml:1: the file must be a mapping/],
    ['several documents', 'groups: []\n---\ngroups: []\n', /^g\.yaml: not valid YAML or JSON: expected a single document/],
    ['a route with a multicast source', 'routes:\n  - {group: 239.1.2.3, source: 239.0.0.1, iif: a, oifs: [b]}\n', /^g\.yaml:2: "source" must be a unicast host address/],
    ['a route without oifs', 'routes:\n  - group: 239.1.2.3\n    source: 10.0.0.5\n    iif: a\n', /^g\.yaml:2: a route needs "oifs"/],
    ['a route twice', 'routes:\n  - {group: 239.1.2.3, source: 10.0.0.5, iif: a, oifs: [b]}\n  - {group: 239.1.2.3, source: 10.0.0.5, iif: c, oifs: [d]}\n', /^g\.yaml:3: route \(10\.0\.0\.5, 239\.1\.2\.3\) is declared twice \(first at line 2\)/],
  ];
  for (const [name, text, message] of refusals) {
    it(`refuses ${name}, naming the line`, () => {
      assert.throws(() => parseDeclaredState(text, 'g.yaml'), (error: unknown) => error instanceof UsageError && message.test(error.message));
    });
  }
});
