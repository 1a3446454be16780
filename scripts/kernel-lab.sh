#!/usr/bin/env bash
# The kernel lab: runs one command inside a throwaway virtual machine whose kernel has
# multicast routing, for the tests and benchmarks that need it on a host kernel without.
# See usage() and docs/architecture.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

usage() {
  cat <<'EOF'
Usage: scripts/kernel-lab.sh [OPTIONS] -- COMMAND [ARGS...]
       scripts/kernel-lab.sh --prepare | --status

Runs COMMAND inside a throwaway virtual machine (QEMU) whose kernel has IPv4 and IPv6
multicast routing: Debian's stock kernel, with the host's root file system read-only
under a writable overlay in memory, so the checkout, node, OVS and every tool are there
at the same paths. COMMAND runs as root in the same working folder with the same
environment; its stdout, stderr and exit status pass through. Nothing it writes reaches
the host, and nothing it starts outlives the machine.

The first run fetches the kernel and busybox from Debian's archive (and QEMU when it is
missing) into a cache outside the repository, and tries once whether KVM boots the guest;
it says on stderr which it uses. With software emulation (TCG), the guest runs node about
ten times slower than the host and a run costs about 4 s of boot and 1 GB of memory.

Options:
  --timeout SECONDS  stop the machine after this long and exit 124 (default 3600)
  --cpus N           the guest's CPUs (default: the host's, at most 4)
  --memory MIB       the guest's memory (default 4096)
  --accel MODE       auto, kvm or tcg (default auto: KVM where it boots the guest)
  --writable DIR     a host folder the command may write to, at the same path in
                     the guest (repeatable): how results leave the machine
  --cache DIR        the cache (default $MCASTCTL_KERNEL_LAB_CACHE or
                     /var/cache/mcastctl-kernel-lab)
  --prepare          fetch and prepare what the lab needs, run nothing
  --status           print the prepared kernel and the accelerator, run nothing
  --quiet            no progress lines on stderr
  -h, --help         this text

Exit status: COMMAND's own; 124 when the time ran out; 125 when the lab could not run it
(no root, a fetch failed, the machine did not boot); 64 for a usage error.

Environment: MCASTCTL_KERNEL_LAB_CACHE (the cache, as --cache); MCASTCTL_KERNEL_LAB_KEEP=1
keeps the run's folder in /tmp (the guest's console, QEMU's messages) for a look afterwards.
EOF
}

say() { [ "$quiet" = 1 ] || printf 'kernel-lab: %s\n' "$*" >&2; }
die() { printf 'kernel-lab: %s\n' "$1" >&2; exit "${2:-125}"; }

timeout_seconds=3600
cpus=$(($(nproc) < 4 ? $(nproc) : 4))
memory=4096
accel=auto
cache=${MCASTCTL_KERNEL_LAB_CACHE:-/var/cache/mcastctl-kernel-lab}
mode=run
quiet=0
writable=()
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout_seconds=${2-}; shift 2 || die "--timeout needs a value" 64 ;;
    --cpus) cpus=${2-}; shift 2 || die "--cpus needs a value" 64 ;;
    --memory) memory=${2-}; shift 2 || die "--memory needs a value" 64 ;;
    --accel) accel=${2-}; shift 2 || die "--accel needs a value" 64 ;;
    --cache) cache=${2-}; shift 2 || die "--cache needs a value" 64 ;;
    --writable) writable+=("${2-}"); shift 2 || die "--writable needs a folder" 64 ;;
    --prepare) mode=prepare; shift ;;
    --status) mode=status; shift ;;
    --quiet) quiet=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) printf 'kernel-lab: unknown argument %q (the command follows --)\n\n' "$1" >&2; usage >&2; exit 64 ;;
  esac
done
[[ "$timeout_seconds" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a whole number of seconds, not '$timeout_seconds'" 64
[[ "$cpus" =~ ^[1-9][0-9]?$ ]] || die "--cpus must be a number of CPUs from 1 to 99, not '$cpus'" 64
[[ "$memory" =~ ^[1-9][0-9]{2,5}$ ]] || die "--memory must be a size in MiB from 100, not '$memory'" 64
case "$accel" in auto | kvm | tcg) ;; *) die "--accel must be auto, kvm or tcg, not '$accel'" 64 ;; esac
[[ "$cache" == /* ]] || die "--cache must be an absolute path, not '$cache'" 64
for index in "${!writable[@]}"; do
  folder=${writable[$index]}
  [ -d "$folder" ] || die "--writable $folder: no such folder" 64
  folder=$(cd "$folder" && pwd -P)
  # The kernel's command line carries the paths: words without blanks or commas.
  [[ "$folder" =~ ^/[A-Za-z0-9._/+-]*$ ]] || die "--writable $folder: only letters, digits and . _ / + - in its path, please" 64
  writable[$index]=$folder
done
if [ "$mode" = run ] && [ $# -eq 0 ]; then
  printf 'kernel-lab: no command given (scripts/kernel-lab.sh -- COMMAND ARGS...)\n\n' >&2
  usage >&2
  exit 64
fi
[ "$(id -u)" -eq 0 ] || die "needs root: the guest mounts the host's root as root, and the command runs as root there"

# --- What the host needs: QEMU, a static busybox for the initramfs, kmod for the modules.

declare -A package_of=(
  [qemu-system-x86_64]=qemu-system-x86 [busybox]=busybox-static [depmod]=kmod [modprobe]=kmod [xz]=xz-utils
)
ensure_host_tools() {
  local missing=() command
  for command in "${!package_of[@]}"; do
    command -v "$command" >/dev/null 2>&1 || missing+=("${package_of[$command]}")
  done
  # The initramfs needs a busybox that runs with no libraries at all.
  if command -v busybox >/dev/null 2>&1 && ldd "$(command -v busybox)" >/dev/null 2>&1; then
    missing+=(busybox-static)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  local packages
  packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  say "installing Debian packages: $packages"
  apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null ||
    die "cannot install $packages"
}

# --- The kernel: Debian's stock amd64 kernel (both families of multicast routing, 9p and
# overlay as modules), unpacked into the cache, never installed into the host's /boot.

# The newest prepared kernel in the cache, or nothing.
prepared_kernel() {
  local ready
  ready=$(find "$cache" -mindepth 2 -maxdepth 2 -name ready -printf '%h\n' 2>/dev/null | sort -V | tail -n 1)
  [ -n "$ready" ] && basename "$ready"
  return 0
}

current_kernel_package() {
  local package
  package=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
  if [ -z "$package" ]; then
    apt-get update -qq || die "apt-get update failed"
    package=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
  fi
  [ -n "$package" ] || die "Debian's archive names no linux-image-amd64 kernel (is this Debian, with its archive reachable?)"
  printf '%s\n' "$package"
}

# The modules the first stage loads, in dependency order: virtio's PCI transport, 9p over
# it, overlay.
initramfs_modules() {
  local root=$1 version=$2 module path
  for module in virtio_pci 9pnet_virtio 9p overlay; do
    modprobe -d "$root" -S "$version" --show-depends "$module" | awk '$1 == "insmod" { print $2 }'
  done | awk '!seen[$0]++' | while read -r path; do
    printf '%s\n' "${path#"$root"/}"
  done
}

prepare_kernel() {
  local package version dir download root
  package=$(current_kernel_package)
  version=${package#linux-image-}
  dir="$cache/$version"
  [ -f "$dir/ready" ] && return 0
  say "fetching $package from Debian's archive into $cache"
  rm -rf "$dir"
  download="$dir/download"
  root="$dir/root"
  mkdir -p "$download" "$root"
  # apt's sandbox user cannot write into a root-owned cache: download as root, on purpose.
  (cd "$download" && apt-get download -o APT::Sandbox::User=root "$package" >/dev/null) ||
    die "cannot download $package"
  dpkg-deb -x "$download"/*.deb "$root" || die "cannot unpack $package"
  rm -rf "$download"
  [ -f "$root/boot/vmlinuz-$version" ] || die "$package has no /boot/vmlinuz-$version"
  grep -q '^CONFIG_IP_MROUTE=y' "$root/boot/config-$version" && grep -q '^CONFIG_IPV6_MROUTE=y' "$root/boot/config-$version" ||
    die "$package is built without multicast routing (CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE)"
  depmod -b "$root" "$version" || die "depmod failed on $package"

  # The uncompressed kernel boots through its PVH entry, which skips seconds of
  # decompression under emulation: its XZ stream starts at the XZ magic in the bzImage.
  local offset
  offset=$(grep -abo $'\xfd7zXZ\x00' "$root/boot/vmlinuz-$version" | head -n 1 | cut -d: -f1)
  [ -n "$offset" ] || die "no XZ stream in $root/boot/vmlinuz-$version"
  tail -c +$((offset + 1)) "$root/boot/vmlinuz-$version" | xz -dc >"$dir/vmlinux" 2>/dev/null || true
  [ "$(head -c 4 "$dir/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || die "the kernel's XZ stream is not an ELF image"
  make_initramfs "$version"
  printf '%s\n' "$package" >"$dir/ready"
}

# The initramfs: a static busybox, the first stage as /init, and the modules it loads.
make_initramfs() {
  local version=$1
  local dir="$cache/$version" root="$cache/$version/root"
  local initramfs="$dir/initramfs"
  rm -rf "$initramfs"
  mkdir -p "$initramfs/bin" "$initramfs/modules" "$initramfs/proc" "$initramfs/sys" "$initramfs/dev"
  cp "$(command -v busybox)" "$initramfs/bin/busybox"
  cp "$here/kernel-lab/initramfs-init" "$initramfs/init"
  chmod 755 "$initramfs/init"
  local module_path
  initramfs_modules "$root" "$version" | while read -r module_path; do
    cp "$root/$module_path" "$initramfs/modules/"
    basename "$module_path" >>"$initramfs/modules/order"
  done
  (cd "$initramfs" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$dir/initramfs.cpio.gz")
  rm -rf "$initramfs"
}

# The initramfs carries this checkout's first stage: a changed first stage makes it anew.
refresh_initramfs_if_changed() {
  [ "$here/kernel-lab/initramfs-init" -nt "$cache/$version/initramfs.cpio.gz" ] || return 0
  make_initramfs "$version"
}

# --- One boot of the guest.

work=''
qemu_pid=''
cleanup() {
  if [ -n "$qemu_pid" ]; then kill "$qemu_pid" 2>/dev/null || true; fi
  # MCASTCTL_KERNEL_LAB_KEEP keeps the run's folder (console, output) for a look afterwards.
  if [ -n "$work" ] && [ -z "${MCASTCTL_KERNEL_LAB_KEEP:-}" ]; then rm -rf "$work"; fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# forward FILE COUNTER FD: copies to FD what FILE holds past the byte count in the
# variable COUNTER, and moves COUNTER on.
forward() {
  local file=$1 counter=$2 fd=$3 size done
  size=$(stat -c %s "$file" 2>/dev/null || echo 0)
  done=${!counter}
  [ "$size" -gt "$done" ] || return 0
  tail -c +$((done + 1)) "$file" | head -c $((size - done)) >&"$fd"
  printf -v "$counter" %d "$size"
}

# boot ACCEL SECONDS COMMAND...: runs the command in a guest, following its output;
# sets boot_status to the command's status, or to 124 (time out) or 125 (no status).
boot() {
  local with=$1 seconds=$2
  shift 2
  local dir="$cache/$version"
  work=$(mktemp -d /tmp/mcl-kernel-lab.XXXXXX)
  chmod 755 "$work"
  printf '%s\0' "$@" >"$work/argv"
  env -0 >"$work/environ"
  pwd >"$work/cwd"
  : >"$work/stdout"
  : >"$work/stderr"
  local accelerator cpu writable_devices=() writable_paths='' index
  for index in "${!writable[@]}"; do
    writable_devices+=(-fsdev "local,id=writable$index,path=${writable[$index]},security_model=none")
    writable_devices+=(-device "virtio-9p-pci,fsdev=writable$index,mount_tag=writable$index")
    writable_paths+="${writable_paths:+,}${writable[$index]}"
  done
  if [ "$with" = kvm ]; then accelerator=kvm; cpu=host; else accelerator=tcg,thread=multi,tb-size=512; cpu=max; fi
  qemu-system-x86_64 \
    -accel "$accelerator" -cpu "$cpu" -smp "$cpus" -m "$memory" \
    -nodefaults -no-user-config -nographic -no-reboot \
    -kernel "$dir/vmlinux" -initrd "$dir/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 loglevel=6 printk.time=1 mcl.modules=$dir/root/lib/modules mcl.stage2=$here/kernel-lab/guest.sh mcl.writable=$writable_paths" \
    -serial "file:$work/console" -monitor none \
    -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on" \
    -device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot" \
    -fsdev "local,id=share,path=$work,security_model=none" \
    -device "virtio-9p-pci,fsdev=share,mount_tag=share" \
    "${writable_devices[@]}" \
    >"$work/qemu.log" 2>&1 &
  qemu_pid=$!
  # Not a job of this shell: it would announce a QEMU that aborts (KVM refusing the guest).
  disown "$qemu_pid"
  # The command's output, followed as the guest writes it into the shared folder.
  stdout_done=0
  stderr_done=0
  local deadline=$((SECONDS + seconds)) timed_out=0 running=1
  while [ "$running" = 1 ]; do
    kill -0 "$qemu_pid" 2>/dev/null || running=0
    forward "$work/stdout" stdout_done 1
    forward "$work/stderr" stderr_done 2
    if [ "$running" = 1 ] && [ "$SECONDS" -ge "$deadline" ]; then
      timed_out=1
      kill "$qemu_pid" 2>/dev/null || true
      running=0
    fi
    [ "$running" = 1 ] && sleep 0.2
  done
  wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=''
  if [ "$timed_out" = 1 ]; then
    boot_status=124
  elif [ -s "$work/status" ]; then
    boot_status=$(<"$work/status")
  else
    boot_status=125
  fi
}

# The tail of what the guest's console and QEMU said, for a guest that did not finish.
boot_failure_report() {
  [ -s "$work/started" ] && return 0
  printf 'kernel-lab: the guest did not start the command; its console ended:\n' >&2
  tail -n 15 "$work/console" "$work/qemu.log" 2>/dev/null | sed 's/^/  /' >&2
}

# --- The accelerator: KVM when the host has it and it boots this guest (tried once per
# kernel and host kernel, the answer cached), software emulation otherwise.

choose_accel() {
  local probe="$cache/$version/accel-$(uname -r)"
  if [ "$accel" != auto ]; then
    chosen=$accel
    reason="asked for with --accel"
    return 0
  fi
  if [ ! -w /dev/kvm ]; then
    chosen=tcg
    reason="this host has no usable /dev/kvm"
    return 0
  fi
  if [ ! -s "$probe" ]; then
    say "trying whether KVM boots the guest (once; the answer is kept in $probe)"
    local saved_quiet=$quiet
    quiet=1
    boot kvm 45 true
    quiet=$saved_quiet
    if [ "$boot_status" = 0 ]; then
      echo "kvm KVM boots the guest" >"$probe"
    else
      echo "tcg KVM did not boot the guest here (tried once, kept in $probe)" >"$probe"
    fi
    rm -rf "$work"
    work=''
  fi
  read -r chosen reason <"$probe"
}

ensure_host_tools
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
version=$(prepared_kernel)
if [ -z "$version" ]; then
  prepare_kernel
  version=$(prepared_kernel)
fi
refresh_initramfs_if_changed
choose_accel
flock -u 9

describe="Linux $version (Debian), $([ "$chosen" = kvm ] && echo KVM || echo 'software emulation (TCG)'): $reason"
case "$mode" in
  prepare) say "ready: $describe"; exit 0 ;;
  status) printf '%s\n' "$describe"; exit 0 ;;
esac

say "$describe; running: $*"
started=$SECONDS
boot "$chosen" "$timeout_seconds" "$@"
case "$boot_status" in
  124) say "stopped: the command ran past --timeout $timeout_seconds s" ;;
  125) boot_failure_report ;;
  *) say "the command exited $boot_status after $((SECONDS - started)) s in the guest" ;;
esac
exit "$boot_status"
