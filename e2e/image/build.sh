#!/usr/bin/env bash
# Builds keel's qemu test guest from Debian trixie packages and prints the
# directory that holds it. The build is cached, keyed by a hash of its recipe
# (this script, the guest's /init and the systemd unit), in a directory
# outside the clone:
#
#   ${KEEL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keel-e2e}/<flavour>-<hash>/
#
# Usage: e2e/image/build.sh [fast|systemd]     (default fast)
#
#   fast     vmlinuz + initrd.img: the whole root file system is the initramfs.
#   systemd  vmlinuz + initrd.img (the fast one, used as first stage) + root.img:
#            an ext4 image with systemd as PID 1, built without loop devices.
#
# The Debian mirror comes from MIRROR, or else from the first URIs: line of
# /etc/apt/sources.list.d/debian.sources. Needs root, mmdebstrap, cpio, zstd,
# and mke2fs (systemd flavour). Progress goes to stderr; stdout is the path.
set -euo pipefail

flavour=${1:-fast}
case $flavour in
fast | systemd) ;;
*)
	echo "build.sh: unknown flavour $flavour (fast or systemd)" >&2
	exit 2
	;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KEEL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keel-e2e}
suite=trixie
# Storage modules whose dependency closure goes into the guest.
modules="dm-mod dm-vdo dm-thin-pool dm-cache dm-cache-smq dm-snapshot dm-mirror dm-zero
dm-writecache dm-integrity dm-delay dm-flakey dm-crypt xts essiv bcache nvme virtio_scsi sd_mod virtio_blk 9p 9pnet_virtio loop
ext4 xfs crc32c_generic crct10dif_generic virtio-rng
dm-raid raid1 md-mod dm-multipath dm-round-robin dm-service-time softdog"
packages=lvm2,vdo,bcache-tools,thin-provisioning-tools,util-linux,udev,kmod,e2fsprogs,procps,mdadm,lvm2-lockd,sanlock
fast_packages=systemd-standalone-sysusers
systemd_packages=systemd,systemd-sysv,dbus,iproute2,ansible-core,python3-apt,apt

recipe_hash() {
	cat "$here/build.sh" "$here/init" "$here/keel-e2e.service" "$here/keel-e2e-run" | sha256sum | cut -c1-12
}

log() { printf 'build.sh: %s\n' "$*" >&2; }

mkdir -p "$cache"
hash=$(recipe_hash)
out=$cache/$flavour-$hash
if [ -f "$out/ok" ]; then
	echo "$out"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "build.sh: building the guest needs root (mmdebstrap --mode=root)" >&2
	exit 2
fi

# One build at a time per cache directory; a second caller waits and then
# finds the finished build.
exec 9>"$cache/build.lock"
flock 9
if [ -f "$out/ok" ]; then
	echo "$out"
	exit 0
fi

mirror=${MIRROR:-}
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ]; then
	echo "build.sh: no Debian mirror: set MIRROR or add a URIs: line to /etc/apt/sources.list.d/debian.sources" >&2
	exit 2
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
source_line="deb [signed-by=$keyring] $mirror $suite main"

start=$(date +%s.%N)
work=$(mktemp -d "$cache/build.XXXXXX")
# Never delete a tree that still has something mounted in it (an interrupted
# mmdebstrap can leave /dev, /proc or /sys bind mounts behind).
cleanup() {
	if grep -q " $work/" /proc/mounts; then
		echo "build.sh: leaving $work: it still has mounts" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

# A private apt configuration: the host's apt state stays untouched.
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$cache/debs"
echo "$source_line" >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=/dev/null
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Dir::State::status=/dev/null
	-o Debug::NoLocking=1 -o Acquire::Languages=none -o APT::Sandbox::User=root)
log "apt update ($suite)"
apt-get -qq "${apt_opts[@]}" update >&2

# The kernel: the versioned package behind linux-image-amd64, cached by version.
kpkg=$(apt-cache "${apt_opts[@]}" depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$kpkg" ]; then
	echo "build.sh: cannot resolve linux-image-amd64 in $suite" >&2
	exit 2
fi
kver=${kpkg#linux-image-}
kdir=$cache/kernel-$kver
if [ ! -f "$kdir/ok" ]; then
	log "kernel $kpkg: download and extract"
	rm -rf "$kdir" && mkdir -p "$kdir/x"
	(cd "$kdir" && apt-get -qq "${apt_opts[@]}" download "$kpkg" >&2)
	dpkg-deb -x "$kdir"/"${kpkg}"_*.deb "$kdir/x"
	rm -f "$kdir"/*.deb
	touch "$kdir/ok"
fi

# Userspace from trixie packages; downloaded .debs are kept in $cache/debs.
make_rootfs() { # make_rootfs DIR EXTRA_PACKAGES
	local dir=$1 extra=$2
	log "mmdebstrap $suite into $(basename "$dir") (+$extra)"
	mmdebstrap --quiet --variant=essential --mode=root --format=directory \
		--include="$packages,$extra" \
		--aptopt='Acquire::Languages "none"' \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/zoneinfo/*' --dpkgopt='path-exclude=/usr/share/bash-completion/*' \
		--skip=download/empty \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
		--setup-hook="sync-in '$cache/debs' /var/cache/apt/archives/" \
		--customize-hook="sync-out /var/cache/apt/archives '$cache/debs'" \
		"$suite" "$dir" "$source_line" >&2 2> >(grep -v -e 'cannot execute mount' -e 'gpg --version' >&2)

	# Kernel modules: the closure of $modules, resolved with the guest's own kmod.
	local tmp=/keel-modtree moddir=$dir/usr/lib/modules/$kver
	mkdir -p "$dir$tmp/lib/modules"
	cp -a "$kdir/x/usr/lib/modules/$kver" "$dir$tmp/lib/modules/"
	chroot "$dir" depmod -b "$tmp" "$kver"
	mkdir -p "$moddir"
	local m f
	for m in $modules; do
		chroot "$dir" modprobe -d "$tmp" -S "$kver" --show-depends "$m" | awk '$1=="insmod"{print $2}'
	done | sort -u | while read -r f; do
		mkdir -p "$dir/usr/lib/modules/$kver/$(dirname "${f#"$tmp"/lib/modules/"$kver"/}")"
		cp "$dir$f" "$dir/usr/lib/modules/$kver/${f#"$tmp"/lib/modules/"$kver"/}"
	done
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		cp "$dir$tmp/lib/modules/$kver/$f" "$moddir/"
	done
	rm -rf "${dir:?}$tmp"
	chroot "$dir" depmod "$kver"

	# Trim what a storage test never reads; keep the dpkg status (dpkg-query -W).
	rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/* "$dir"/usr/share/man "$dir"/usr/share/doc \
		"$dir"/usr/share/info "$dir"/usr/share/locale "$dir"/usr/share/zoneinfo \
		"$dir"/usr/lib/x86_64-linux-gnu/gconv "$dir"/usr/lib/udev/hwdb.bin "$dir"/usr/lib/udev/hwdb.d \
		"$dir"/etc/udev/hwdb.bin
	mkdir -p "$dir/mnt/host"
}

mkdir -p "$work/out"
if [ "$flavour" = systemd ] && [ -f "$cache/fast-$hash/ok" ]; then
	# Same recipe: the fast guest's kernel and initramfs are the first stage.
	cp "$cache/fast-$hash/vmlinuz" "$cache/fast-$hash/initrd.img" "$work/out/"
	cp "$cache/fast-$hash/versions.txt" "$work/versions.fast"
else
	cp "$kdir/x/boot/vmlinuz-$kver" "$work/out/vmlinuz"
	make_rootfs "$work/fast" "$fast_packages"
	install -m 0755 "$here/init" "$work/fast/init"
	log "pack initrd.img"
	(cd "$work/fast" && find . -xdev -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
		zstd -q -T0 -3 -o "$work/out/initrd.img"
	{
		echo "suite $suite"
		echo "kernel $kpkg"
		chroot "$work/fast" dpkg-query -W lvm2 dmsetup vdo bcache-tools thin-provisioning-tools util-linux udev kmod
	} >"$work/versions.fast"
fi

if [ "$flavour" = systemd ]; then
	make_rootfs "$work/sd" "$systemd_packages"
	install -m 0644 "$here/keel-e2e.service" "$work/sd/etc/systemd/system/keel-e2e.service"
	install -m 0755 "$here/keel-e2e-run" "$work/sd/usr/local/sbin/keel-e2e-run"
	mkdir -p "$work/sd/etc/systemd/system/multi-user.target.wants"
	ln -sf /etc/systemd/system/keel-e2e.service "$work/sd/etc/systemd/system/multi-user.target.wants/keel-e2e.service"
	echo "/dev/vda / ext4 rw,errors=remount-ro 0 0" >"$work/sd/etc/fstab"
	echo keel-guest >"$work/sd/etc/hostname"
	# A fixed machine id, and no first-boot prompts on the console.
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$work/sd/etc/machine-id"
	echo >>"$work/sd/etc/machine-id"
	ln -sf /dev/null "$work/sd/etc/systemd/system/systemd-firstboot.service"
	# Root logs in on the console without a password (interactive mode only).
	sed -i 's/^root:[^:]*:/root::/' "$work/sd/etc/shadow"
	# The console getty stays for the interactive mode; the VM has no network.
	log "mke2fs root.img"
	truncate -s 3G "$work/out/root.img"
	mke2fs -q -t ext4 -L keel-root -d "$work/sd" "$work/out/root.img"
fi

grep -v build_seconds "$work/versions.fast" >"$work/out/versions.txt"
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN{printf "build_seconds %.1f\n", e-s}' >>"$work/out/versions.txt"
touch "$work/out/ok"
rm -rf "$out"
mv "$work/out" "$out"
log "guest $flavour ready in $out ($(awk '/build_seconds/{print $2}' "$out/versions.txt") s)"
echo "$out"
