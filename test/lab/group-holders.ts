/**
 * Pods that hold group memberships for a test or a bench: one Python process that enters
 * each pod's network namespace and joins there with real kernel sockets, and the helpers
 * that wait for such a child process's "ready" and stop it.
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Lab } from './lab.js';

/**
 * One process for every pod: enters each pod's network namespace in turn (setns) and
 * joins the groups there with sockets made in it (a socket keeps its namespace), at most
 * 20 groups a socket (net.ipv4.igmp_max_memberships). argv: groups joined by commas, the
 * sources to join each from joined by commas (at most net.ipv4.igmp_max_msf; `-`: any
 * source), then namespace names. Prints "ready" once every join is made; holds them until
 * stdin closes.
 */
export const HOLDER_PY = `
import ctypes, os, socket, sys
IP_ADD_SOURCE_MEMBERSHIP = 39  # linux/in.h (Python's socket module may lack it)
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
groups = sys.argv[1].split(",")
sources = [] if sys.argv[2] == "-" else sys.argv[2].split(",")
sockets = []
for ns in sys.argv[3:]:
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns " + ns)
    os.close(fd)
    for start in range(0, len(groups), 20):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for g in groups[start:start + 20]:
            if not sources:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(g) + socket.inet_aton("0.0.0.0"))
            for src in sources:
                # struct ip_mreq_source: multiaddr, interface, sourceaddr
                s.setsockopt(socket.IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, socket.inet_aton(g) + socket.inet_aton("0.0.0.0") + socket.inet_aton(src))
        sockets.append(s)
print("ready", flush=True)
sys.stdin.read()
`;

/** Resolves with the child's first stdout line equal to `word`; rejects if it exits first. */
export function waitForLine(child: ChildProcess, word: string, timeoutMs: number, what: string): Promise<void> {
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what}: no "${word}" within ${timeoutMs} ms: ${stderr.trim()}`)),
      timeoutMs,
    );
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.trim() === word) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before "${word}": ${stderr.trim()}`));
    });
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdin?.end();
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
  return exited.finally(() => clearTimeout(timer));
}

/**
 * Joins every group of `groups` in every pod namespace of `namespaces` (a process run in
 * `ns`, which must see /run/netns); resolves once every join is made. stopChild leaves them.
 */
export async function holdGroups(
  lab: Lab,
  options: { ns: string; groups: readonly string[]; namespaces: readonly string[] },
): Promise<ChildProcess> {
  const child = lab.spawn(options.ns, [
    'python3',
    '-u',
    '-c',
    HOLDER_PY,
    options.groups.join(','),
    '-',
    ...options.namespaces,
  ]);
  await waitForLine(child, 'ready', 60_000, 'group holder');
  return child;
}
