package plan

import "sort"

// Rule is one entry of the finding catalogue: a stable finding ID, the
// severity every finding with that ID carries, a short title and a one-line
// summary. docs/findings.md documents each ID at length; a test checks that
// it documents exactly the IDs of Catalogue.
type Rule struct {
	ID       FindingID
	Severity Severity
	Title    string
	Doc      string
}

// runtimeIDs are the findings the convergence loop raises about its own
// work (an invalid desired state, a stuck or refused action) rather than
// the planner about the host.
var runtimeIDs = map[FindingID]bool{ConfigInvalid: true, ReconcileRefused: true, ReconcileStuck: true}

// Runtime reports whether r is raised by keel apply and keel run about
// their own work; keel check never raises it, so its JUnit report leaves it
// out.
func (r Rule) Runtime() bool { return runtimeIDs[r.ID] }

// Catalogue is every finding keel can raise, sorted by ID. IDs never change
// meaning once released; a retired ID is not reused.
var Catalogue = []Rule{
	{ActivationPVScanOnLVs, Error, "declared pools in a VG on an LV were not activated at boot",
		"A thin or VDO pool declared in a VG on an LV is inactive while that LV is active: lvm2's udev rules skip PVs on LVs at boot unless LVM_PVSCAN_ON_LVS=1 is set for the LV. A VG whose LVs are all inactive with nothing declared in it is Proxmox's normal state after a boot and raises nothing."},
	{ActivationUdevRule, Warning, "keel's PV-scan udev rule is missing or stale",
		"The udev rule that sets LVM_PVSCAN_ON_LVS=1 for the declared LVs under stacked VGs is absent or differs from what the desired state generates."},
	{AutoextendAtMaximum, Warning, "a pool reached its autoextend maximum",
		"The next autoextend step at the declared percent would take the pool past its declared maximum (LVM cannot express one), so keel attached the pool's profile that turns autoextend off; or an extension already passed it. The pool no longer grows on its own."},
	{AutoextendPolicy, Warning, "a pool's autoextend policy is not applied",
		"The LVM metadata profile keel writes for the pool's policy (/etc/lvm/profile/keel-*.profile) is missing or differs, or the pool has another profile attached (lv_profile): dmeventd's lvextend --use-policies does not use the declared threshold and percent."},
	{AutoextendStaleProfile, Info, "an LVM profile keel wrote is used by no LV or VG",
		"A keel-<vg>-<pool>-t<T>-p<P> or -off profile in /etc/lvm/profile, left when a pool's policy changed or the pool went away, that no LV or VG on this host has attached (lv_profile, vg_profile). keel removes it; it never touches a profile it did not write."},
	{AutoextendUnmonitored, Error, "a pool with an autoextend policy is not monitored",
		"The pool's seg_monitor is not \"monitored\": dmeventd does not watch it, so nothing extends it however full it gets."},
	{BcacheCacheMode, Warning, "bcache cache mode differs",
		"The backing device's cache_mode is not the declared one."},
	{BcacheMissing, Error, "bcache backing device not registered",
		"No registered bcache device has the declared backing device."},
	{BcacheState, Error, "bcache device not attached or inconsistent",
		"The backing device reports state 'no cache' while a cache set is declared, or 'inconsistent'."},
	{BcacheTunable, Warning, "bcache tunable differs",
		"A per-device tunable (sequential_cutoff, writeback_*, congested thresholds) is not the declared value; the kernel resets them at every registration."},
	{BcacheUdevRule, Warning, "keel's bcache udev rule is missing or stale",
		"The udev rule that sets the declared bcache tunables at registration is absent or differs from what the desired state generates."},
	{ConfigInvalid, Error, "the desired state does not validate",
		"The newest desired state is invalid or not owned by root; the last good one stays in force until it is fixed."},
	{DMSuspended, Critical, "a device-mapper device stays suspended",
		"A device-mapper device was still suspended after the probe's wait: its I/O waits, the VMs on it stall, and LVM commands scanning it hang. An LVM command killed between its suspend and resume leaves one; keel drops its preloaded table, resumes it and refreshes its LV, and changes nothing else meanwhile. A device LVM did not make is only reported."},
	{HoldActive, Info, "an operator's hold is in force",
		"keel hold put the object on hold: every action keel would take on it is reported instead, and keel's bcache udev rule leaves a held bcache device out, until keel release or the hold's expiry."},
	{HoldExpired, Warning, "an operator's hold has lapsed",
		"A hold's --until has passed: keel acts on the object again. Release it if the work is done, or hold it again with a later expiry."},
	{LVAbsent, Info, "LV declared absent still exists",
		"An LV listed in absent exists; keel removes it safely (rename, zero or discard in steps, lvremove)."},
	{LVAbsentChain, Error, "LV declared absent is part of a Proxmox VE volume chain not declared absent whole",
		"A qcow2 volume chain (snapshot-as-volume-chain on an lvm storage) is one disk: the current volume reads through every snapshot LV below it. keel removes a chain whole or not at all, never through one of its links."},
	{LVAbsentReappeared, Warning, "LV under an absent name is not the one to remove",
		"An LV exists under an absent name but is not the LV the entry was written for (another UUID after keel removed one, or created after keel first saw the name): a reused name, never wiped."},
	{LVAbsentReferenced, Error, "LV declared absent is named by a guest's configuration",
		"A Proxmox VE VM or container config (any node's, snapshot sections and unused disks included) or a libvirt domain names the LV: removing it destroys a disk a guest still has, so keel never does; an unreadable guest configuration holds every removal."},
	{LVAbsentShared, Error, "LV declared absent is in a VG shared between nodes",
		"The VG is shared (lvmlockd, clvmd, a Proxmox storage with shared 1, or shared: true in the desired state), or keel cannot tell (a Proxmox VE node whose storage.cfg cannot be read): the LV may be in use on another node, so keel never activates, clears or removes it."},
	{LVAbsentUnzeroedPool, Error, "removal of a thin LV held: its pool does not zero new chunks",
		"An LV declared absent is a thin LV of a pool with zeroing off: its removal would hand its chunks, with its bytes, to the next thin LV of the pool, so keel holds it until the pool zeroes or removal.allowUnzeroedThinReuse accepts the reuse."},
	{LVSharedAutoactivation, Warning, "a guest disk of a shared VG is autoactivated at boot on every node",
		"A Proxmox VE guest disk of a VG shared between nodes has autoactivation on (and its VG too): every node that sees the VG activates it at boot, and a node keeps its device-mapper device after another node removed the disk, so a new disk under that name fails to activate there (Proxmox VE bug 4997). pve-storage creates disks with --setautoactivation n since 9.0.3."},
	{LVMConfOverridden, Error, "a managed lvm.conf setting is set where keel does not write",
		"lvm.conf and lvmlocal.conf already state the declared value but LVM reads another: a tag file (lvm_<tag>.conf) sets it, later in LVM's config cascade. keel writes nothing for that setting, since a write there would change nothing and repeat on every pass."},
	{LVMDevicesFile, Warning, "lvm devices file setting differs",
		"devices/use_devicesfile differs from the declared value; with the devices file on, global_filter is not the only gate."},
	{LVMDevicesFileMissingPV, Error, "LVM's devices file does not list a PV",
		"With use_devicesfile=1 and the devices file present LVM uses only the devices it lists: a declared PV it misses is invisible to LVM, and keel refuses to turn use_devicesfile on while the file misses a PV of any VG."},
	{LVMDevicesFileStale, Warning, "a devices file entry matches no device",
		"An entry of the devices file in force names a PV LVM does not find or a device the host does not have: a disk removed or replaced without lvmdevices --deldev."},
	{LVMFilterHidesPV, Error, "declared global_filter would hide a PV in use",
		"The global_filter keel would write rejects every name of a PV of some VG (judged with LVM's alias rule), or keel cannot model it: the VG would vanish from LVM's view while its LVs run, so keel writes nothing to lvm.conf."},
	{LVMGlobalFilter, Warning, "global_filter does not reject guest disks",
		"devices/global_filter is not the declared filter, or (audit) scan_lvs is on and the filter does not hide the LVs holding VM disks."},
	{LVMInitramfsStale, Info, "the initramfs holds an older lvm.conf",
		"keel rewrites global_filter or scan_lvs this pass; the initramfs keeps its own copy of /etc/lvm, which early boot uses until update-initramfs -u rebuilds it."},
	{LVMRaidFaultPolicy, Warning, "raid_fault_policy is not the declared one",
		"activation/raid_fault_policy, which tells dmeventd what to do when a leg of a monitored LVM RAID LV fails (warn, or allocate a replacement), is not the value declared in lvm: raidFaultPolicy."},
	{LVMScanLVs, Error, "scan_lvs does not match the stack",
		"devices/scan_lvs differs from the declared value, or a declared VG sits on an LV while scan_lvs is 0."},
	{PVMultipathComponent, Error, "a declared PV is one path of a multipath map, not the map",
		"A declared PV names a block device that is a path (a slave) of a device-mapper multipath map: LVM hides such a path (devices/multipath_component_detection) and uses the map, and writing to one path bypasses the map. keel plans nothing in the VG until its pvs name the map (/dev/mapper/NAME)."},
	{PVMultipathDegraded, Warning, "a path of the multipath map under a PV failed",
		"The multipath map under a declared PV has failed paths (dm-mpath's status shows F): I/O goes down the paths left, and one more failure may take the PV away."},
	{PVMultipathNoPath, Critical, "no path of the multipath map under a PV is left",
		"Every path of the multipath map under a declared PV has failed: I/O to the PV fails (or queues, with queue_if_no_path) until a path comes back."},
	{PVEDiscardOnRemove, Warning, "Proxmox storage on VDO does not discard removed disks",
		"A Proxmox lvm storage on a VG stacked on VDO lacks saferemove, so VDO keeps the blocks of deleted disks."},
	{PVEStorageCfgUnreadable, Warning, "Proxmox VE node whose storage.cfg cannot be read",
		"pve-manager is installed or /etc/pve exists, but storage.cfg is missing or unreadable (pmxcfs has not mounted /etc/pve yet, or pve-cluster is restarting): keel cannot tell which VGs a Proxmox storage shares, so it counts every VG shared and removes no absent LV."},
	{RAIDDegraded, Error, "a RAID under a declared pool lost a member",
		"An LVM RAID LV is partial (lv_health_status: a leg's PV is missing) or an md array under a PV has a failed member or fewer members than raid_disks (md/degraded, md/dev-*/state faulty): one more failure loses the data."},
	{RAIDMismatches, Warning, "a RAID's copies differ",
		"The last scrub of an LVM RAID LV (raid_mismatch_count, lv_health_status \"mismatches exist\") or of an md array (md/mismatch_cnt) found blocks whose copies differ: a read may return either."},
	{RAIDRefreshNeeded, Warning, "an LVM RAID LV's kernel table still has a failed leg",
		"lv_health_status is \"refresh needed\": the kernel marked a leg failed after an I/O error while LVM's metadata still lists its PV as present (a transient failure): the LV runs without that leg's redundancy until it is refreshed."},
	{RAIDResyncing, Info, "a RAID is copying or checking its members",
		"An LVM RAID LV's sync_percent is below 100, or an md array's sync_action is resync, recover, check, repair or reshape: redundancy is not whole until it ends."},
	{ReconcileRefused, Error, "an action was refused by a safety guard",
		"A safety guard stopped an action before anything ran (a signature on a PV, an open LV under a maintenance change, a command keel does not run, an lvm.conf filter keel cannot parse)."},
	{ReconcileStuck, Error, "an action does not converge",
		"An action did not converge after every retry, or something keeps undoing it; keel tries it again only when the desired or observed state changes."},
	{StateUnrecorded, Warning, "the first sight of absent names could not be recorded",
		"keel records when it first reads each absent name, in every mode (check, plan, audit, dry run, converge), and removes only LVs created before that moment. Its state file could not be written (a read-only /var/lib/keel, a user without write access): nothing is removed under the unrecorded names until a reading that can write records them. The check itself goes on."},
	{ThinChunkSize, Warning, "thin pool chunk size differs (immutable)",
		"The chunk size is not the declared one (audit: 1 MiB or larger); it is fixed at creation, so the remedy is a rebuild."},
	{ThinCreateInterrupted, Warning, "thin pool creation interrupted",
		"lvm2 made the pool keel was creating, but keel stopped before it ended: the pool still carries keel's creation tag, and may be inactive; keel activates it and drops the tag."},
	{ThinDataUsage, Warning, "thin pool data above the alert level",
		"data_percent is at or above the pool's dataPercentAlert."},
	{ThinHealth, Critical, "thin pool needs attention",
		"The pool reports needs_check, out_of_data_space, read-only or a failed target."},
	{ThinMetadataSize, Warning, "thin pool metadata smaller than declared",
		"The metadata LV is smaller than metadataSize; it can be grown live, never reduced."},
	{ThinMetadataUsage, Error, "thin pool metadata above the alert level",
		"metadata_percent is at or above the pool's metadataPercentAlert; full metadata stops the pool."},
	{ThinMissing, Error, "thin pool missing",
		"A declared thin pool does not exist in its VG."},
	{ThinOnVDO, Error, "thin pool on VDO",
		"A thin pool's data sits on a VDO LV: two thin layers, two sets of books."},
	{ThinOverprovisioned, Warning, "thin LVs add up to more than the pool's declared maxOverprovision",
		"The virtual sizes of the pool's thin LVs and snapshots, added up, exceed maxOverprovision times the pool's data size: written in full, they would need more than the pool can grow into before it fills."},
	{ThinSize, Warning, "thin pool data size differs from the declared size",
		"The pool's data LV, in whole extents, is below its declared size (keel grows it live with lvextend) or above it (reported; keel never shrinks)."},
	{ThinStripeAlignment, Warning, "thin chunk does not cover a RAID stripe",
		"The chunk size is not a multiple of the declared full stripe (stripe size x data disks)."},
	{ThinUnzeroedReuse, Warning, "thin pool hands out removed chunks unzeroed",
		"An LV declared absent is a thin LV of a pool with zeroing off and removal.allowUnzeroedThinReuse accepts its removal: the chunks it frees keep their bytes until reused, readable by the thin LV that gets them."},
	{ThinZeroing, Warning, "thin pool zeroing differs",
		"zero_new_blocks differs from the declared value (audit: zeroing on, which doubles writes)."},
	{VDOBlockMapCache, Warning, "VDO block map cache differs",
		"The block map cache size is not the declared one; it changes only with the pool stopped."},
	{VDOCompression, Warning, "VDO compression differs",
		"Compression is not the declared setting."},
	{VDOCreateInterrupted, Warning, "VDO pool creation interrupted",
		"lvm2 made the VDO pool keel was creating, but keel stopped before it ended: the pool still carries keel's creation tag, and its VDO LV may be inactive; keel activates it and drops the tag."},
	{VDODedupeTimeouts, Warning, "VDO dedupe advice timed out",
		"vdostats counts dedupe advice timeouts: the index is too slow and duplicates are written anyway."},
	{VDODeduplication, Warning, "VDO deduplication differs",
		"Deduplication is not the declared setting."},
	{VDOIndex, Error, "VDO index not online",
		"Deduplication is on but the UDS index state is not online."},
	{VDOIndexMemory, Warning, "VDO index memory or sparse index differs (immutable)",
		"index_memory_size or use_sparse_index differ from the declared values; fixed at creation."},
	{VDOIndexOpening, Info, "VDO index opening",
		"Deduplication is on and the UDS index is still loading (or rebuilding) after the pool started; it dedupes again once online."},
	{VDOLayoutHeadOffFast, Error, "split VDO pool: index or roots not on the fast PVs",
		"Part of the geometry block, UDS index, super block or block-map roots lies on a PV that is not declared fast."},
	{VDOLayoutJournalOffFast, Critical, "split VDO pool: recovery journal left the fast PVs",
		"Part of the recovery journal or slab summary (the last 32832 blocks of _vdata) lies on a slow PV, usually after a grow."},
	{VDOMaxDiscard, Warning, "VDO max_discard differs",
		"max_discard is not the declared value (audit: LVM's default of one 4 KiB block)."},
	{VDOMemory, Error, "VDO RAM bill above available memory",
		"The pools still to be created or activated need more RAM than LVM counts as available (it refuses them), or all pools together need more than the host's memory (the next boot cannot activate them all)."},
	{VDOMissing, Error, "VDO pool missing",
		"A declared VDO pool or its VDO LV does not exist."},
	{VDOMode, Critical, "VDO pool not in normal mode",
		"The operating mode is read-only or recovering."},
	{VDOOvercommit, Error, "VDO virtual size above what the pool can address",
		"The VDO LV promises more space than the pool holds: thick on thin. lvreduce shrinks it, after what sits on it is shrunk."},
	{VDOSize, Warning, "VDO pool physical size differs from the declared size",
		"The VDO pool LV is below its declared size (keel grows it live with lvextend, a split pool in steps that keep its journal on the fast PVs) or above it by more than LVM's smallest VDO grow (reported; a VDO pool cannot shrink)."},
	{VDOSlabRemainder, Info, "VDO pool wastes a slab remainder",
		"The space between the last whole slab and the recovery journal is above a tenth of a slab; LVM extends a pool by whole slabs, so only a grow of one slab less the remainder plus one slab uses it."},
	{VDOSlabSize, Warning, "VDO slab size differs (immutable)",
		"The slab size is not the declared one; fixed at creation."},
	{VDOThreads, Warning, "VDO thread layout differs",
		"The running thread counts differ from the declared layout (audit: from one thread per CPU); they change only with the pool stopped."},
	{VDOUsage, Warning, "VDO pool above the alert level",
		"The pool's used percent is at or above usedPercentAlert."},
	{VDOVirtualSize, Warning, "VDO LV size differs from the declared virtual size",
		"The VDO LV is below its declared virtualSize (keel grows it live with lvextend) or above it (reported; keel never shrinks it)."},
	{VGForeign, Error, "a VG of the declared name on other PVs",
		"LVM reports a VG under a declared name, but none of its PVs is a declared device (a disk moved from a dead node, a guest's VG made visible, a VG made again elsewhere): keel plans nothing in it, creates and removes nothing."},
	{VGInactive, Error, "VG has inactive LVs",
		"A declared VG is present but its pools or LVs are not active."},
	{VGIncomplete, Critical, "VG is missing PVs",
		"A declared VG is partial: one or more of its PVs is missing."},
	{VGLockstartMissing, Warning, "a shared VG's lockspace is not started on this host",
		"A VG with an lvmlockd lock type (sanlock, dlm) has no lockspace started here (lvmlockctl --info does not list it): LVM reads it without locks, activates none of its LVs and changes nothing in it until vgchange --lockstart."},
	{VGLvmlockdMissing, Error, "a VG has an lvmlockd lock type but lvmlockd is not running",
		"A VG with an lvmlockd lock type (sanlock, dlm) is on this host and lvmlockd is not running: no lockspace can start, so none of the VG's LVs activates here and the guests on it cannot run on this node."},
	{VGMissing, Error, "VG missing",
		"A declared VG does not exist."},
	{VGPVGrown, Warning, "the device under a PV grew",
		"The PV's device has room for more extents than the PV spans (a LUN or virtual disk resized): keel runs pvresize, live."},
	{VGPVNotInVG, Warning, "a declared PV is not in its VG",
		"A declared PV of an existing VG is not one of its PVs: keel adds a blank device (or an orphan PV) with vgextend; a PV of another VG, or a device not on the host, is only reported."},
	{VGPVMoveInterrupted, Error, "a pvmove in a declared VG did not finish",
		"A pvmove's temporary mirror LV (pvmove<N>) is still in the VG: the command that ran it was killed or the host crashed before the copy ended, and the LVs it moves stay locked. keel resumes it from its last checkpoint (pvmove SOURCE-PV), as lvm2 does at activation."},
	{VGPVMoveOrphan, Error, "a pvmove left its temporary LV behind",
		"A pvmove<N> LV that is no longer a mirror is still in the VG: the pvmove committed the moved LVs and turned its mirror into an error segment, then was killed or could not deactivate it before removing it. keel reloads any LV whose live table still maps it, then removes it (lvremove; an error segment holds no data)."},
	{VGPVMoveOther, Warning, "a pvmove keel did not start is in progress",
		"A pvmove keel's state does not record starting (an admin's, or another node's on a shared VG) copies in a declared VG, and a pvmove or lvpoll process polls it: keel reports it and never resumes, aborts or polls it."},
	{VGPVMoveOtherInterrupted, Error, "a pvmove keel did not start stopped before the end",
		"A pvmove keel's state does not record starting left its mirror LV in a declared VG and no process polls it: the LVs it moves stay locked. keel reports it and never resumes or aborts it; whoever started it does."},
	{VGPVsDrift, Warning, "a declared VG's PVs differ from its declaration",
		"A declared VG holds at least one declared PV, but also PVs not declared (a vgextend by hand, or a PV dropped from the declaration): the declared VG, changed by hand; keel goes on acting in it and never removes the PV on its own."},
	{VGSharedChange, Warning, "a change held because its VG is shared between nodes",
		"keel would change an object of a VG shared between nodes (lvmlockd, clvm, Proxmox VE's shared 1, shared: true): it plans no command, sysfs write or wipe on such a VG, as another node may hold its LVs active or write its metadata; the node that owns the object makes the change."},
	{VGUnreadable, Critical, "VG unreadable while its LVs run",
		"LVM reads no metadata of a declared VG whose LVs still run in the kernel: a PV under it fails or is gone."},
	{VGUUIDChanged, Error, "another VG under a declared name",
		"The vg_uuid under a declared name differs from the one keel recorded at first sight: the VG was removed and made again, or replaced. keel holds every change in it until an operator acknowledges it (keel ack-vg)."},
	{WaiverExpired, Warning, "a waiver has expired",
		"A waiver of the desired state is past its expires date; the finding it waived counts again."},
	{WaiverUnknown, Warning, "a waiver names no known finding",
		"A waiver's id is not a finding ID keel raises, so it waives nothing (a typo, or an ID from another version)."},
}

var catalogueIndex = func() map[FindingID]int {
	m := make(map[FindingID]int, len(Catalogue))
	for i, r := range Catalogue {
		m[r.ID] = i
	}
	return m
}()

// Lookup returns the catalogue entry for id. Every FindingID constant has
// one; an ID read as data (a waiver, a JSON report) may not.
func Lookup(id FindingID) (Rule, bool) {
	i, ok := catalogueIndex[id]
	if !ok {
		return Rule{}, false
	}
	return Catalogue[i], true
}

// Severity returns the severity every finding with the ID carries, Info
// for an ID not in the catalogue (none of the constants).
func (id FindingID) Severity() Severity {
	r, _ := Lookup(id)
	return r.Severity
}

// SortFindings orders findings by severity (most serious first), then ID,
// then object: the order of every output format.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Object < b.Object
	})
}
