#!/bin/bash
# The kernel lab's second stage, PID 1 in the guest, on the host's root under an overlay:
# make the system a command expects (/run, /dev/pts, loopback, module loading), run the
# command the host wrote into the shared folder, with its environment and working folder,
# its output into the shared folder, write its exit status there, and power off.
# As PID 1, bash reaps every orphan while it waits for the command: daemons that detach
# (ovs-vswitchd, ovsdb-server) would otherwise stay zombies that `kill -0` finds alive.
share="$1"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

power_off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 10
}

mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mkdir -p /dev/pts /dev/shm /run/lock
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
[ -e /dev/ptmx ] || ln -s pts/ptmx /dev/ptmx
ln -sf /proc/self/fd /dev/fd
hostname kernel-lab
ip link set lo up

# No udev here: the modules whose devices are opened rather than asked for (the tun
# device of OVS's user-space datapath) load by hand; the rest load on demand.
echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe
modprobe tun

mapfile -d '' -t argv <"$share/argv"
while IFS= read -r -d '' variable; do
  [[ "$variable" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] && export "${variable?}"
done <"$share/environ"
cwd=$(<"$share/cwd")
cd "$cwd" || { echo 125 >"$share/status"; power_off; }

printf 'started\n' >"$share/started"
"${argv[@]}" >"$share/stdout" 2>"$share/stderr" </dev/null
status=$?
printf '%d\n' "$status" >"$share/status"
power_off
