# Helpers shared by the safe-removal scenarios (e2e/wipe, e2e/ownership,
# e2e/boot/activate.sh) and by e2e/lvmfilter/hidepv.sh and e2e/sizes, sourced
# from the share: "ok:" / "FAIL:" lines counted in FAILS,
# setup steps that end the scenario, and the LV list a refusal compares.
FAILS=0
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}
must() { step "$@" || { fail "setup: $*"; exit 100; }; }
# sum LV: the sha256 of VG/LV (active); fill LV MIB: MIB random MiB at its
# start; exists LV: LVM lists VG/LV.
sum() { sha256sum "/dev/$1" | cut -d' ' -f1; }
fill() { must dd if=/dev/urandom of="/dev/$1" bs=1M count="$2" oflag=direct status=none; }
exists() { lvs "$1" >/dev/null 2>&1; }
# lvlist: every LV with the fields in LVLIST_FIELDS and its lv_attr, sorted.
# lv_attr's sixth character, "o" while something holds the LV open, is
# masked: udev's blkid opens an LV after every write-close (its inotify
# watch, 60-persistent-storage rules), so under load that bit flickers with
# nothing changed; CI's wipe lane failed on it (reuse.sh, section 3). When
# lvs fails it prints a line that no other call prints and fails, so two
# lists taken while LVM is broken never compare equal ("nothing changed"
# must not pass on two empty lists).
lvlist() {
	local l
	l=$(lvs -a --noheadings -o "${LVLIST_FIELDS:-vg_name,lv_name,lv_tags},lv_attr") || {
		echo "lvs failed ($$ $RANDOM $RANDOM)"
		return 1
	}
	awk '{ $NF = substr($NF, 1, 5) "." substr($NF, 7); print }' <<<"$l" | sort
}
