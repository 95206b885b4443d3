#!/usr/bin/env bash
# Storage surgery under an operator's hold (docs/operations.md): bcache0 in
# writeback holds dirty data; the admin holds it (keel hold), switches it to
# writethrough to drain the cache before pulling the SSD, and keel (keel
# apply, and keel's udev rule on a "change" uevent of the device) does not
# write writeback back until keel release.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --ssd 256M --hdd 256M e2e/ownership/hold.sh \
#     e2e/wipe/wipelib.sh e2e/scenarios/stacks.sh
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/hold
mkdir -p "$O"
. "$SHARE/wipelib.sh"
. "$SHARE/stacks.sh"
ssd=$(disk ssd1) hd=$(disk hdd1)
mkdir -p /etc/keel /var/lib/keel
chmod 755 /etc/keel
CFG=/etc/keel/hold.cue
printf 'bcache: bcache0: {\n\tbacking: "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"\n\tcacheMode: "writeback"\n\tsequentialCutoff: 0\n}\n' >"$CFG"
chmod 644 "$CFG"
mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/bcache0/bcache/cache_mode; }
# One make-bcache for both: the backing device records the cache set and
# attaches as it registers; both are registered here, not left to udev.
must make-bcache --wipe-bcache --bucket 64k -C "$ssd" -B "$hd"
udevadm settle
bcache_register "$ssd" && bcache_register "$hd" || { fail "setup: register: $(dmesg | grep -i bcache | tail -3)"; exit 100; }
for i in $(seq 100); do [ -e /sys/block/bcache0/bcache/cache ] && break; sleep 0.1; done
[ -e /sys/block/bcache0/bcache/cache ] || { fail "setup: bcache0 not attached: $(dmesg | grep -i bcache | tail -3)"; exit 100; }
must "$KEEL" apply -c "$CFG"
[ "$(mode)" = writeback ] || { fail "setup: cache_mode $(mode) after keel apply"; exit 100; }
udevadm settle
must dd if=/dev/urandom of=/dev/bcache0 bs=64k count=64 oflag=direct status=none
echo "dirty_data after 4 MiB written: $(cat /sys/block/bcache0/bcache/dirty_data)"

# The surgery: hold, drain, then keel's entry points and a change uevent.
rc=0
"$KEEL" hold bcache0 --reason "drain the cache SSD before pulling it" --until 2099-12-31 >"$O/hold.txt" 2>&1 || rc=$?
sed 's/^/    /' "$O/hold.txt"
[ "$rc" -eq 0 ] && ok "keel hold bcache0 recorded the hold" || fail "keel hold bcache0: exit $rc"
echo writethrough >/sys/block/bcache0/bcache/cache_mode
"$KEEL" apply -c "$CFG" >"$O/apply.txt" 2>&1
sed 's/^/    /' "$O/apply.txt"
udevadm trigger -c change /dev/bcache0
udevadm settle
if [ "$(mode)" = writethrough ]; then
	ok "keel apply and a change uevent left the held bcache0 in writethrough"
else
	fail "bcache0 back in $(mode) after keel apply and a change uevent: the drain was undone"
fi
"$KEEL" check -c "$CFG" >"$O/check.txt" 2>&1
sed 's/^/    /' "$O/check.txt"
if grep -q "hold.active  bcache0" "$O/check.txt" && grep -q "drain the cache SSD" "$O/check.txt"; then
	ok "keel check shows the hold on bcache0 with its reason"
else
	fail "keel check does not show the hold on bcache0"
fi
"$KEEL" status >"$O/status.txt" 2>&1
grep -q "drain the cache SSD" "$O/status.txt" && ok "keel status shows the hold" || fail "keel status does not show the hold"

# Released, keel converges it again.
rc=0
"$KEEL" release bcache0 >"$O/release.txt" 2>&1 || rc=$?
"$KEEL" apply -c "$CFG" >"$O/apply2.txt" 2>&1
if [ "$rc" -eq 0 ] && [ "$(mode)" = writeback ]; then
	ok "after keel release bcache0, keel apply writes writeback again"
else
	fail "after keel release (exit $rc): cache_mode $(mode)"
fi

# keel's bcache rule sets the tunables when the kernel registers the
# device, not at every change uevent: a value set by hand outlives one.
echo writethrough >/sys/block/bcache0/bcache/cache_mode
udevadm trigger -c change /dev/bcache0
udevadm settle
if [ "$(mode)" = writethrough ]; then
	ok "a change uevent does not make keel's udev rule write the tunables"
else
	fail "a change uevent made keel's udev rule write cache_mode $(mode)"
fi
echo 4194304 >/sys/block/bcache0/bcache/sequential_cutoff
bcache_reregister "$ssd" "$hd" || fail "re-register"
udevadm settle
cutoff=$(cat /sys/block/bcache0/bcache/sequential_cutoff 2>/dev/null)
if [ "$cutoff" = 0.0k ] && [ "$(mode)" = writeback ]; then
	ok "at a registration keel's udev rule writes the tunables (sequential_cutoff 0.0k, writeback)"
else
	fail "after a registration: sequential_cutoff $cutoff, cache_mode $(mode)"
fi
exit "$FAILS"
