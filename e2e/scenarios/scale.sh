# Stacks with thousands of LVs for the scale benchmarks (e2e/bench/guest.sh)
# and the scale fixtures (e2e/capture-fixtures.sh scale-thin scale-vdo).
# Source it after stacks.sh.
#
# One lvcreate per LV would take hours under TCG: every lvcreate rewrites
# the whole VG metadata, which grows with each LV. Instead the LVs are
# written into the VG's metadata text and put on disk with one
# `vgcfgrestore --force -f FILE VG`:
#   - the text is the VG's own `vgcfgbackup` with LV sections added, in the
#     format lvm2 reads back (lib/format_text/import_vsn1.c: an LV has id,
#     status, segment_count and segmentN sections; a linear segment is type
#     "striped" with stripe_count 1 and stripes = [ "pvN", first extent ];
#     a thin segment, lib/thin/thin.c _thin_text_import, has thin_pool,
#     transaction_id and device_id);
#   - vgcfgrestore refuses a VG with thin volumes without --force
#     (lib/format_text/archiver.c, man vgcfgrestore: thin metadata changes
#     cannot be reverted), and asks before it restores over active LVs
#     (tools/vgcfgrestore.c; -y answers);
#   - the thin devices themselves live in the pool's kernel metadata, and
#     LVM creates them only from messages it queues in the pool segment and
#     sends while it suspends the pool (lib/metadata/thin_manip.c
#     update_thin_pool_lv; a plain activation sends none). So they are
#     created as the kernel documents it
#     (Documentation/admin-guide/device-mapper/thin-provisioning.rst):
#     "create_thin ID" messages to the active pool, then
#     "set_transaction_id OLD NEW", and the restored text carries the new
#     transaction_id, as LVM would have written it.
# As on a Proxmox host, where a VM's disks are active only while the VM
# runs, only the first ACTIVE LVs are activated (one lvchange for all).
#
# LVM keeps the whole VG metadata text in each PV's metadata area, and one
# copy may fill at most half of it (lib/format_text/format-text.c: "exceeds
# maximum metadata size"). pvcreate's default area, 1 MiB, so holds about
# 1,500 thin LVs or fewer linear ones: a VG with 2,000 VM disks needs PVs
# made with a larger --metadatasize, here SCALE_MDA.
SCALE_MDA=4m

# scale_room VG: VG, which must have no LVs and one PV, made again on that
# PV with a SCALE_MDA metadata area.
scale_room() {
	local vg=$1 pv
	pv=$(pvs --noheadings -o pv_name -S "vg_name=$vg" | tr -d ' ')
	[ -n "$pv" ] && [ "$(lvs --noheadings -o lv_name "$vg" | wc -l)" = 0 ] ||
		{ echo "scale_room: $vg must have one PV and no LVs" >&2; return 1; }
	step vgremove -q -y "$vg" && step pvremove -q -y "$pv" &&
		step pvcreate -q --metadatasize "$SCALE_MDA" "$pv" && step vgcreate -q "$vg" "$pv"
}

# scale_name I: the I-th VM disk's name, vm-<1000+I>-disk-0 (Proxmox's).
scale_name() { echo "vm-$((1000 + $1))-disk-0"; }

# scale_text BACKUP KIND N ARG... : BACKUP with N LV sections added to the
# VG's logical_volumes (made when the VG has none), on stdout.
#   KIND linear PV FIRST EXTENTS: LV i on PV (its name in the text, "pv0")
#        at extents FIRST + i*EXTENTS;
#   KIND thin POOL EXTENTS: thin LV i (device_id i) in POOL, EXTENTS
#        virtual; the pool's transaction_id raised by one.
scale_text() {
	local backup=$1 kind=$2 n=$3
	shift 3
	awk -v kind="$kind" -v n="$n" -v a1="${1:-}" -v a2="${2:-}" -v a3="${3:-}" \
		-v stamp="$(date +%s)" -v host="$(uname -n)" '
	function uuid(i,   s) {
		s = sprintf("K%sscale%025d", substr(kind, 1, 1), i)
		return substr(s, 1, 6) "-" substr(s, 7, 4) "-" substr(s, 11, 4) "-" substr(s, 15, 4) "-" \
			substr(s, 19, 4) "-" substr(s, 23, 4) "-" substr(s, 27, 6)
	}
	function lvs(   i, ext) {
		for (i = 1; i <= n; i++) {
			printf "\t\t%s {\n", "vm-" (1000 + i) "-disk-0"
			printf "\t\t\tid = \"%s\"\n", uuid(i)
			printf "\t\t\tstatus = [\"READ\", \"WRITE\", \"VISIBLE\"]\n\t\t\tflags = []\n"
			printf "\t\t\tcreation_time = %d\n\t\t\tcreation_host = \"%s\"\n", stamp, host
			printf "\t\t\tsegment_count = 1\n\n\t\t\tsegment1 {\n\t\t\t\tstart_extent = 0\n"
			if (kind == "linear") {
				printf "\t\t\t\textent_count = %d\n\n\t\t\t\ttype = \"striped\"\n", a3
				printf "\t\t\t\tstripe_count = 1\n\n\t\t\t\tstripes = [\n\t\t\t\t\t\"%s\", %d\n\t\t\t\t]\n", a1, a2 + (i - 1) * a3
			} else {
				printf "\t\t\t\textent_count = %d\n\n\t\t\t\ttype = \"thin\"\n", a2
				printf "\t\t\t\tthin_pool = \"%s\"\n\t\t\t\ttransaction_id = %d\n\t\t\t\tdevice_id = %d\n", a1, tid, i
			}
			printf "\t\t\t}\n\t\t}\n\n"
		}
	}
	# The pool segment: its transaction_id line (the only one before thin
	# LVs exist; checked) raised by one.
	kind == "thin" && /^[ \t]*transaction_id = [0-9]+$/ {
		if (seen++) { print "scale_text: more than one transaction_id in the backup" > "/dev/stderr"; exit 2 }
		tid = $3
		sub(/[0-9]+$/, tid + 1)
		print
		next
	}
	{
		line = $0
		opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
		if (depth == 1 && $0 ~ /^[ \t]*logical_volumes \{/) inlv = 1
		if (closes > opens && inlv && depth == 2) { lvs(); inlv = 0; done = 1 }
		if (closes > opens && depth == 1 && !done) { print "\tlogical_volumes {\n"; lvs(); print "\t}"; done = 1 }
		depth += opens - closes
		print
	}
	END { if (!done) { print "scale_text: no VG section in the backup" > "/dev/stderr"; exit 2 } }
	' "$backup"
}

# scale_activate VG N ACTIVE: activate the first min(N, ACTIVE) LVs in one lvchange.
scale_activate() {
	local vg=$1 n=$2 active=$3 i names=()
	[ "$active" -gt "$n" ] && active=$n
	for i in $(seq "$active"); do names+=("$vg/$(scale_name "$i")"); done
	[ ${#names[@]} = 0 ] || step lvchange -ay -q "${names[@]}"
}

# scale_linear VG N ACTIVE [EXTENTS]: VG (one PV with a SCALE_MDA metadata area)
# gets N linear LVs of EXTENTS extents (default 1) after its last allocated
# extent, and the first ACTIVE of them active. VG's LVs named vm-*-disk-0
# beyond the first must not exist yet, so run it on a VG as first built, or
# to grow the LVs of an earlier scale_linear (same EXTENTS; the earlier LVs
# keep their extents and stay active).
scale_linear() {
	local vg=$1 n=$2 active=$3 ext=${4:-1} dir first pv
	dir=$(mktemp -d /tmp/scale.XXXXXX) || return
	# Drop an earlier scale_linear's LVs from the base: they are written again.
	if [ -e "/tmp/scale-$vg.base" ]; then
		cp "/tmp/scale-$vg.base" "$dir/base"
	else
		step vgcfgbackup -q -f "$dir/base" "$vg" >/dev/null || return
		cp "$dir/base" "/tmp/scale-$vg.base"
	fi
	pv=$(awk '/^\t\tpv[0-9]+ \{/ { print $1; exit }' "$dir/base")
	# The first free extent: the end of the VG's own LVs in the base text.
	first=$(awk '/extent_count/ { c = $3 } /stripes = \[/ { getline; gsub(/[",]/, ""); if ($2 + c > m) m = $2 + c } END { print m + 0 }' "$dir/base")
	[ -n "$pv" ] || { echo "scale_linear: no PV in $vg's backup" >&2; return 1; }
	scale_text "$dir/base" linear "$n" "$pv" "$first" "$ext" >"$dir/new" || return
	step vgcfgrestore -q -y -f "$dir/new" "$vg" || return
	scale_activate "$vg" "$n" "$active" || return
	rm -rf "$dir"
}

# scale_autoactivation_off VG N ACTIVE: after scale_linear VG N ACTIVE, turn
# autoactivation off for every VM disk but the first ACTIVE, as Proxmox VE's
# stopped guests would have it: `lvchange --setautoactivation n` on the
# last one, then its status and flags lines copied into the others'
# sections and restored in one vgcfgrestore (one lvchange per LV would
# rewrite the whole metadata once per LV).
scale_autoactivation_off() {
	local vg=$1 n=$2 active=$3 dir last
	last=vm-$((1000 + n))-disk-0
	dir=$(mktemp -d /tmp/scale.XXXXXX) || return
	step lvchange -q --setautoactivation n "$vg/$last" &&
		step vgcfgbackup -q -f "$dir/b" "$vg" >/dev/null || return
	awk -v last="$last" -v lo=$((1000 + active)) -v hi=$((1000 + n)) '
	function num(s) { sub(/^vm-/, "", s); sub(/-disk-0$/, "", s); return s + 0 }
	FNR == NR {
		if ($1 == last && $2 == "{") inlv = 1
		else if (inlv && ($1 == "status" || $1 == "flags")) tmpl[$1] = $0
		else if (inlv && $1 == "creation_time") inlv = 0
		next
	}
	$2 == "{" && $1 ~ /^vm-[0-9]+-disk-0$/ { n = num($1); cur = (n > lo && n < hi) }
	cur && ($1 == "status" || $1 == "flags") && ($1 in tmpl) { print tmpl[$1]; next }
	cur && $1 == "creation_time" { cur = 0 }
	{ print }
	' "$dir/b" "$dir/b" >"$dir/new" && step vgcfgrestore -q -y -f "$dir/new" "$vg" || return
	rm -rf "$dir"
}

# scale_thin DISK VG N ACTIVE: VG on DISK with a thin pool tp (1G data, 64M
# metadata, zeroing off) and N thin LVs of 1G virtual, the first ACTIVE active.
scale_thin() {
	local disk=$1 vg=$2 n=$3 active=$4 dir tpool tid i
	dir=$(mktemp -d /tmp/scale.XXXXXX) || return
	step pvcreate -q --metadatasize "$SCALE_MDA" "$disk" && step vgcreate -q "$vg" "$disk" &&
		step lvcreate -y -q --type thin-pool -Z n --poolmetadatasize 64M -L 1G -n tp "$vg" &&
		step vgcfgbackup -q -f "$dir/base" "$vg" >/dev/null || return
	# The pool's kernel device: the only thin-pool target of this VG.
	tpool=$(dmsetup ls --target thin-pool | awk -v p="$vg-" 'index($1, p) == 1 { print $1 }')
	tid=$(awk '$1 == "transaction_id" { print $3; exit }' "$dir/base")
	[ -n "$tpool" ] && [ -n "$tid" ] || { echo "scale_thin: no active pool or transaction_id for $vg/tp" >&2; return 1; }
	echo "+ dmsetup message $tpool 0 create_thin 1..$n"
	for i in $(seq "$n"); do
		dmsetup message "$tpool" 0 "create_thin $i" || { echo "scale_thin: create_thin $i failed" >&2; return 1; }
	done
	step dmsetup message "$tpool" 0 "set_transaction_id $tid $((tid + 1))" &&
		scale_text "$dir/base" thin "$n" tp 256 >"$dir/new" &&
		step vgcfgrestore -q -y --force -f "$dir/new" "$vg" || return
	scale_activate "$vg" "$n" "$active" || return
	rm -rf "$dir"
}
