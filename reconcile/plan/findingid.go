package plan

// FindingID is the stable ID of a kind of finding, such as "vdo.overcommit":
// the constants below are every ID keel raises, Catalogue has an entry for
// each and docs/findings.md documents each (TestFindingIDs checks all
// three). Producers name a constant, never a literal, so a misspelt ID does
// not compile. It is a string, so every output format (text, JSON, JUnit,
// Prometheus, the journal) writes the ID as it is.
type FindingID string

// The finding IDs, sorted. Each comment is the ID's catalogue title.
const (
	// ActivationPVScanOnLVs is activation.pvscan_on_lvs: declared pools in a
	// VG on an LV were not activated at boot.
	ActivationPVScanOnLVs FindingID = "activation.pvscan_on_lvs"

	// ActivationUdevRule is activation.udev_rule: keel's PV-scan udev rule is
	// missing or stale.
	ActivationUdevRule FindingID = "activation.udev_rule"

	// AutoextendAtMaximum is autoextend.at_maximum: a pool reached its
	// autoextend maximum.
	AutoextendAtMaximum FindingID = "autoextend.at_maximum"

	// AutoextendPolicy is autoextend.policy: a pool's autoextend policy is
	// not applied.
	AutoextendPolicy FindingID = "autoextend.policy"

	// AutoextendStaleProfile is autoextend.stale_profile: an LVM profile
	// keel wrote is used by no LV or VG.
	AutoextendStaleProfile FindingID = "autoextend.stale_profile"

	// AutoextendUnmonitored is autoextend.unmonitored: a pool with an
	// autoextend policy is not monitored.
	AutoextendUnmonitored FindingID = "autoextend.unmonitored"

	// BcacheCacheMode is bcache.cache_mode: bcache cache mode differs.
	BcacheCacheMode FindingID = "bcache.cache_mode"

	// BcacheMissing is bcache.missing: bcache backing device not registered.
	BcacheMissing FindingID = "bcache.missing"

	// BcacheState is bcache.state: bcache device not attached or inconsistent.
	BcacheState FindingID = "bcache.state"

	// BcacheTunable is bcache.tunable: bcache tunable differs.
	BcacheTunable FindingID = "bcache.tunable"

	// BcacheUdevRule is bcache.udev_rule: keel's bcache udev rule is missing
	// or stale.
	BcacheUdevRule FindingID = "bcache.udev_rule"

	// ConfigInvalid is config.invalid: the desired state does not validate.
	ConfigInvalid FindingID = "config.invalid"

	// DMSuspended is dm.suspended: a device-mapper device stays suspended.
	DMSuspended FindingID = "dm.suspended"

	// HoldActive is hold.active: an operator's hold is in force.
	HoldActive FindingID = "hold.active"

	// HoldExpired is hold.expired: an operator's hold has lapsed.
	HoldExpired FindingID = "hold.expired"

	// LVAbsent is lv.absent: LV declared absent still exists.
	LVAbsent FindingID = "lv.absent"

	// LVAbsentChain is lv.absent_chain: LV declared absent is part of a
	// Proxmox VE volume chain not declared absent whole.
	LVAbsentChain FindingID = "lv.absent_chain"

	// LVAbsentReappeared is lv.absent_reappeared: LV under an absent name is
	// not the one to remove.
	LVAbsentReappeared FindingID = "lv.absent_reappeared"

	// LVAbsentReferenced is lv.absent_referenced: LV declared absent is
	// named by a guest's configuration.
	LVAbsentReferenced FindingID = "lv.absent_referenced"

	// LVAbsentShared is lv.absent_shared: LV declared absent is in a VG shared
	// between nodes.
	LVAbsentShared FindingID = "lv.absent_shared"

	// LVAbsentUnzeroedPool is lv.absent_unzeroed_pool: removal of a thin LV
	// held: its pool does not zero new chunks.
	LVAbsentUnzeroedPool FindingID = "lv.absent_unzeroed_pool"

	// LVSharedAutoactivation is lv.shared_autoactivation: a guest disk of a
	// shared VG is autoactivated at boot on every node.
	LVSharedAutoactivation FindingID = "lv.shared_autoactivation"

	// LVMDevicesFile is lvm.devices_file: lvm devices file setting differs.
	LVMDevicesFile FindingID = "lvm.devices_file"

	// LVMFilterHidesPV is lvm.filter_hides_pv: declared global_filter would
	// hide a PV in use.
	LVMFilterHidesPV FindingID = "lvm.filter_hides_pv"

	// LVMConfOverridden is lvm.conf_overridden: a managed lvm.conf setting
	// is set where keel does not write.
	LVMConfOverridden FindingID = "lvm.conf_overridden"

	// LVMDevicesFileMissingPV is lvm.devices_file_missing_pv: LVM's devices
	// file does not list a PV.
	LVMDevicesFileMissingPV FindingID = "lvm.devices_file_missing_pv"

	// LVMDevicesFileStale is lvm.devices_file_stale: a devices file entry
	// matches no device.
	LVMDevicesFileStale FindingID = "lvm.devices_file_stale"

	// LVMGlobalFilter is lvm.global_filter: global_filter does not reject
	// guest disks.
	LVMGlobalFilter FindingID = "lvm.global_filter"

	// LVMInitramfsStale is lvm.initramfs_stale: the initramfs holds an older
	// lvm.conf.
	LVMInitramfsStale FindingID = "lvm.initramfs_stale"

	// LVMRaidFaultPolicy is lvm.raid_fault_policy: raid_fault_policy is not
	// the declared one.
	LVMRaidFaultPolicy FindingID = "lvm.raid_fault_policy"

	// LVMScanLVs is lvm.scan_lvs: scan_lvs does not match the stack.
	LVMScanLVs FindingID = "lvm.scan_lvs"

	// PVMultipathComponent is pv.multipath_component: a declared PV is one
	// path of a multipath map, not the map.
	PVMultipathComponent FindingID = "pv.multipath_component"

	// PVMultipathDegraded is pv.multipath_degraded: a path of the multipath
	// map under a PV failed.
	PVMultipathDegraded FindingID = "pv.multipath_degraded"

	// PVMultipathNoPath is pv.multipath_no_path: no path of the multipath map
	// under a PV is left.
	PVMultipathNoPath FindingID = "pv.multipath_no_path"

	// PVEDiscardOnRemove is pve.discard_on_remove: Proxmox storage on VDO does
	// not discard removed disks.
	PVEDiscardOnRemove FindingID = "pve.discard_on_remove"

	// PVEStorageCfgUnreadable is pve.storage_cfg_unreadable: Proxmox VE node
	// whose storage.cfg cannot be read.
	PVEStorageCfgUnreadable FindingID = "pve.storage_cfg_unreadable"

	// RAIDDegraded is raid.degraded: a RAID under a declared pool lost a
	// member.
	RAIDDegraded FindingID = "raid.degraded"

	// RAIDMismatches is raid.mismatches: a RAID's copies differ.
	RAIDMismatches FindingID = "raid.mismatches"

	// RAIDRefreshNeeded is raid.refresh_needed: an LVM RAID LV's kernel
	// table still has a failed leg.
	RAIDRefreshNeeded FindingID = "raid.refresh_needed"

	// RAIDResyncing is raid.resyncing: a RAID is copying or checking its
	// members.
	RAIDResyncing FindingID = "raid.resyncing"

	// ReconcileRefused is reconcile.refused: an action was refused by a safety
	// guard.
	ReconcileRefused FindingID = "reconcile.refused"

	// ReconcileStuck is reconcile.stuck: an action does not converge.
	ReconcileStuck FindingID = "reconcile.stuck"

	// StateUnrecorded is state.unrecorded: the first sight of absent names
	// could not be recorded.
	StateUnrecorded FindingID = "state.unrecorded"

	// ThinChunkSize is thin.chunk_size: thin pool chunk size differs
	// (immutable).
	ThinChunkSize FindingID = "thin.chunk_size"

	// ThinCreateInterrupted is thin.create_interrupted: thin pool creation
	// interrupted.
	ThinCreateInterrupted FindingID = "thin.create_interrupted"

	// ThinDataUsage is thin.data_usage: thin pool data above the alert level.
	ThinDataUsage FindingID = "thin.data_usage"

	// ThinHealth is thin.health: thin pool needs attention.
	ThinHealth FindingID = "thin.health"

	// ThinMetadataSize is thin.metadata_size: thin pool metadata smaller than
	// declared.
	ThinMetadataSize FindingID = "thin.metadata_size"

	// ThinMetadataUsage is thin.metadata_usage: thin pool metadata above the
	// alert level.
	ThinMetadataUsage FindingID = "thin.metadata_usage"

	// ThinMissing is thin.missing: thin pool missing.
	ThinMissing FindingID = "thin.missing"

	// ThinOnVDO is thin.on_vdo: thin pool on VDO.
	ThinOnVDO FindingID = "thin.on_vdo"

	// ThinOverprovisioned is thin.overprovisioned: thin LVs add up to more
	// than the pool's declared maxOverprovision.
	ThinOverprovisioned FindingID = "thin.overprovisioned"

	// ThinSize is thin.size: thin pool data size differs from the declared
	// size.
	ThinSize FindingID = "thin.size"

	// ThinStripeAlignment is thin.stripe_alignment: thin chunk does not cover
	// a RAID stripe.
	ThinStripeAlignment FindingID = "thin.stripe_alignment"

	// ThinUnzeroedReuse is thin.unzeroed_reuse: thin pool hands out removed
	// chunks unzeroed.
	ThinUnzeroedReuse FindingID = "thin.unzeroed_reuse"

	// ThinZeroing is thin.zeroing: thin pool zeroing differs.
	ThinZeroing FindingID = "thin.zeroing"

	// VDOBlockMapCache is vdo.block_map_cache: VDO block map cache differs.
	VDOBlockMapCache FindingID = "vdo.block_map_cache"

	// VDOCompression is vdo.compression: VDO compression differs.
	VDOCompression FindingID = "vdo.compression"

	// VDOCreateInterrupted is vdo.create_interrupted: VDO pool creation
	// interrupted.
	VDOCreateInterrupted FindingID = "vdo.create_interrupted"

	// VDODedupeTimeouts is vdo.dedupe_timeouts: VDO dedupe advice timed out.
	VDODedupeTimeouts FindingID = "vdo.dedupe_timeouts"

	// VDODeduplication is vdo.deduplication: VDO deduplication differs.
	VDODeduplication FindingID = "vdo.deduplication"

	// VDOIndex is vdo.index: VDO index not online.
	VDOIndex FindingID = "vdo.index"

	// VDOIndexMemory is vdo.index_memory: VDO index memory or sparse index
	// differs (immutable).
	VDOIndexMemory FindingID = "vdo.index_memory"

	// VDOIndexOpening is vdo.index_opening: VDO index opening.
	VDOIndexOpening FindingID = "vdo.index_opening"

	// VDOLayoutHeadOffFast is vdo.layout.head_off_fast: split VDO pool: index
	// or roots not on the fast PVs.
	VDOLayoutHeadOffFast FindingID = "vdo.layout.head_off_fast"

	// VDOLayoutJournalOffFast is vdo.layout.journal_off_fast: split VDO pool:
	// recovery journal left the fast PVs.
	VDOLayoutJournalOffFast FindingID = "vdo.layout.journal_off_fast"

	// VDOMaxDiscard is vdo.max_discard: VDO max_discard differs.
	VDOMaxDiscard FindingID = "vdo.max_discard"

	// VDOMemory is vdo.memory: VDO RAM bill above available memory.
	VDOMemory FindingID = "vdo.memory"

	// VDOMissing is vdo.missing: VDO pool missing.
	VDOMissing FindingID = "vdo.missing"

	// VDOMode is vdo.mode: VDO pool not in normal mode.
	VDOMode FindingID = "vdo.mode"

	// VDOOvercommit is vdo.overcommit: VDO virtual size above what the pool
	// can address.
	VDOOvercommit FindingID = "vdo.overcommit"

	// VDOSlabRemainder is vdo.slab_remainder: VDO pool wastes a slab
	// remainder.
	VDOSlabRemainder FindingID = "vdo.slab_remainder"

	// VDOSize is vdo.size: VDO pool physical size differs from the declared
	// size.
	VDOSize FindingID = "vdo.size"

	// VDOSlabSize is vdo.slab_size: VDO slab size differs (immutable).
	VDOSlabSize FindingID = "vdo.slab_size"

	// VDOThreads is vdo.threads: VDO thread layout differs.
	VDOThreads FindingID = "vdo.threads"

	// VDOVirtualSize is vdo.virtual_size: VDO LV size differs from the
	// declared virtual size.
	VDOVirtualSize FindingID = "vdo.virtual_size"

	// VDOUsage is vdo.usage: VDO pool above the alert level.
	VDOUsage FindingID = "vdo.usage"

	// VGForeign is vg.foreign: a VG of the declared name on other PVs.
	VGForeign FindingID = "vg.foreign"

	// VGInactive is vg.inactive: VG has inactive LVs.
	VGInactive FindingID = "vg.inactive"

	// VGIncomplete is vg.incomplete: VG is missing PVs.
	VGIncomplete FindingID = "vg.incomplete"

	// VGLockstartMissing is vg.lockstart_missing: a shared VG's lockspace is
	// not started on this host.
	VGLockstartMissing FindingID = "vg.lockstart_missing"

	// VGLvmlockdMissing is vg.lvmlockd_missing: a VG has an lvmlockd lock
	// type but lvmlockd is not running.
	VGLvmlockdMissing FindingID = "vg.lvmlockd_missing"

	// VGMissing is vg.missing: VG missing.
	VGMissing FindingID = "vg.missing"

	// VGPVGrown is vg.pv_grown: the device under a PV grew.
	VGPVGrown FindingID = "vg.pv_grown"

	// VGPVNotInVG is vg.pv_not_in_vg: a declared PV is not in its VG.
	VGPVNotInVG FindingID = "vg.pv_not_in_vg"

	// VGPVsDrift is vg.pvs_drift: a declared VG's PVs differ from its
	// declaration.
	VGPVsDrift FindingID = "vg.pvs_drift"

	// VGPVMoveInterrupted is vg.pvmove_interrupted: a pvmove in a declared VG
	// did not finish.
	VGPVMoveInterrupted FindingID = "vg.pvmove_interrupted"

	// VGPVMoveOrphan is vg.pvmove_orphan: a pvmove left its temporary LV
	// behind.
	VGPVMoveOrphan FindingID = "vg.pvmove_orphan"

	// VGPVMoveOther is vg.pvmove_other: a pvmove keel did not start is in
	// progress.
	VGPVMoveOther FindingID = "vg.pvmove_other"

	// VGPVMoveOtherInterrupted is vg.pvmove_other_interrupted: a pvmove keel
	// did not start stopped before the end.
	VGPVMoveOtherInterrupted FindingID = "vg.pvmove_other_interrupted"

	// VGSharedChange is vg.shared_change: a change held because its VG is
	// shared between nodes.
	VGSharedChange FindingID = "vg.shared_change"

	// VGUUIDChanged is vg.uuid_changed: another VG under a declared name.
	VGUUIDChanged FindingID = "vg.uuid_changed"

	// VGUnreadable is vg.unreadable: VG unreadable while its LVs run.
	VGUnreadable FindingID = "vg.unreadable"

	// WaiverExpired is waiver.expired: a waiver has expired.
	WaiverExpired FindingID = "waiver.expired"

	// WaiverUnknown is waiver.unknown: a waiver names no known finding.
	WaiverUnknown FindingID = "waiver.unknown"
)
