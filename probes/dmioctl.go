package probes

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// The device-mapper reads of a probe pass (`dmsetup table`, `dmsetup
// status`, `dmsetup message <dev> 0 stats`) cost one process start each,
// which under emulation is most of their time. DMRunner answers them from
// the device-mapper ioctls on /dev/mapper/control instead and prints what
// dmsetup would print, byte for byte, so recorded snapshots and their
// replay do not depend on which way a command was served.

// Layout of the kernel's struct dm_ioctl and its trailing records
// (include/uapi/linux/dm-ioctl.h, interface version 4).
const (
	dmHeaderSize   = 312 // sizeof(struct dm_ioctl)
	dmNameLen      = 128 // DM_NAME_LEN
	dmMaxTypeName  = 16  // DM_MAX_TYPE_NAME
	dmSpecSize     = 40  // sizeof(struct dm_target_spec)
	dmNameListName = 12  // offsetof(struct dm_name_list, name)
	// dmNoData is the data_size the kernel returns when it copies no data
	// (offsetof(struct dm_ioctl, data)), below data_start: seen in the
	// guest for the table of a device created with --notable.
	dmNoData = 305

	dmFlagExists      = 1 << 2  // DM_EXISTS_FLAG, set by libdevmapper on every call
	dmFlagStatusTable = 1 << 4  // DM_STATUS_TABLE_FLAG: the table, not the status
	dmFlagBufferFull  = 1 << 8  // DM_BUFFER_FULL_FLAG: call again with a larger buffer
	dmFlagNoFlush     = 1 << 11 // DM_NOFLUSH_FLAG: status without a metadata commit
	dmFlagDataOut     = 1 << 16 // DM_DATA_OUT_FLAG: a message left a response

	dmBufferStart = 16 << 10 // libdevmapper's first buffer for these calls
	dmBufferMax   = 64 << 20 // give up (and exec dmsetup) beyond this
)

// The three ioctls keel uses: _IOWR(0xfd, nr, struct dm_ioctl) with the
// 312-byte struct, and the interface version libdevmapper sends with each.
const (
	dmIoctlListDevices = 0xc138fd02 // DM_LIST_DEVICES
	dmIoctlTableStatus = 0xc138fd0c // DM_TABLE_STATUS
	dmIoctlTargetMsg   = 0xc138fd0e // DM_TARGET_MSG
)

var (
	dmVersion4    = [3]uint32{4, 0, 0}
	dmVersionMsg4 = [3]uint32{4, 2, 0}
)

// dmCaller performs one device-mapper ioctl (req) on a request built by
// dmRequest and returns the kernel's reply buffer, at least up to its
// data_size, after any buffer-full retries. The buffer may be the
// caller's own, reused by its next call: what a reply holds is copied out
// (as strings) before the next call. The live one is ioctl on the control
// node; tests replay replies captured in the test guest.
type dmCaller func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error)

// reply performs one call and parses the reply's header.
func (call dmCaller) reply(req uint32, version [3]uint32, name string, flags uint32, payload []byte) (dmReply, error) {
	b, err := call(req, version, name, flags, payload)
	if err != nil {
		return dmReply{}, err
	}
	return parseDMReply(b)
}

// dmFormat produces what `dmsetup <kind>` prints (kind "table" or "status"
// for all devices, or "message" with dev for `dmsetup message dev 0 stats`)
// from the ioctl replies call returns.
func dmFormat(call dmCaller, kind, dev string) ([]byte, error) {
	if kind == "message" {
		return dmMessage(call, dev, "stats")
	}
	rep, err := call.reply(dmIoctlListDevices, dmVersion4, "", dmFlagExists, nil)
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	names, err := parseDMNames(rep.Data)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return []byte("No devices found\n"), nil
	}
	flags := uint32(dmFlagExists)
	table := kind == "table"
	if table {
		flags |= dmFlagStatusTable
	} else {
		// Without it, a thin pool's (and a cache's) status commits the
		// pool's metadata before it reports ("Commit to ensure statistics
		// aren't out-of-date", pool_status in drivers/md/dm-thin.c; the
		// flag reaches it as DM_STATUS_NOFLUSH_FLAG, retrieve_status in
		// drivers/md/dm-ioctl.c): a read that writes, and one that blocks
		// in the kernel, beyond any timeout, while the metadata device is
		// slow or failing (e2e/underfire: a watchdog restart under EIO).
		// lvm2 reads pool status for its reports without a flush too.
		flags |= dmFlagNoFlush
	}
	var out []byte
	for _, name := range names {
		rep, err := call.reply(dmIoctlTableStatus, dmVersion4, name, flags, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, name, err)
		}
		targets, err := parseDMTargets(rep.Data, rep.TargetCount)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, name, err)
		}
		out = appendDMLines(out, name, targets, table)
	}
	return out, nil
}

// dmMessage sends message to sector 0 of dev and formats the response.
func dmMessage(call dmCaller, dev, message string) ([]byte, error) {
	payload := make([]byte, 8+len(message)+1) // struct dm_target_msg: sector, then the message
	copy(payload[8:], message)
	rep, err := call.reply(dmIoctlTargetMsg, dmVersionMsg4, dev, dmFlagExists, payload)
	if err != nil {
		return nil, fmt.Errorf("message %s %s: %w", dev, message, err)
	}
	ok := rep.Flags&dmFlagDataOut != 0
	var resp []byte
	if ok {
		s, err := cString(rep.Data)
		if err != nil {
			return nil, fmt.Errorf("message %s %s: response: %w", dev, message, err)
		}
		resp = []byte(s)
	}
	return formatDMMessage(resp, ok), nil
}

// header field offsets in struct dm_ioctl.
const (
	offVersion     = 0
	offDataSize    = 12
	offDataStart   = 16
	offTargetCount = 20
	offFlags       = 28
	offName        = 48
)

var ne = binary.NativeEndian

// dmTarget is one target line of a device's table or status.
type dmTarget struct {
	Start, Length uint64
	Type          string
	Params        string
}

// dmRequest builds a dm_ioctl buffer of size n for device name (may be
// empty) with the given interface version, flags and payload after the
// header.
func dmRequest(n int, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
	return dmRequestIn(make([]byte, n), version, name, flags, payload)
}

// dmRequestIn is dmRequest in b, cleared first: b's length is the size.
func dmRequestIn(b []byte, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
	n := len(b)
	if len(name) >= dmNameLen {
		return nil, fmt.Errorf("device name %q: longer than %d bytes", name, dmNameLen-1)
	}
	if dmHeaderSize+len(payload) > n {
		return nil, fmt.Errorf("payload of %d bytes does not fit a %d-byte buffer", len(payload), n)
	}
	clear(b)
	for i, v := range version {
		ne.PutUint32(b[offVersion+4*i:], v)
	}
	ne.PutUint32(b[offDataSize:], uint32(n))
	ne.PutUint32(b[offDataStart:], dmHeaderSize)
	ne.PutUint32(b[offFlags:], flags)
	copy(b[offName:], name)
	copy(b[dmHeaderSize:], payload)
	return b, nil
}

// dmReply is the kernel's answer: the header fields keel reads and the data
// area (from data_start to data_size).
type dmReply struct {
	Flags       uint32
	TargetCount uint32
	Data        []byte
}

// parseDMReply reads the header of a returned dm_ioctl buffer.
func parseDMReply(b []byte) (dmReply, error) {
	if len(b) < dmHeaderSize {
		return dmReply{}, fmt.Errorf("dm ioctl reply: %d bytes, want at least %d", len(b), dmHeaderSize)
	}
	size := ne.Uint32(b[offDataSize:])
	start := ne.Uint32(b[offDataStart:])
	r := dmReply{Flags: ne.Uint32(b[offFlags:]), TargetCount: ne.Uint32(b[offTargetCount:])}
	if size == dmNoData && r.TargetCount == 0 {
		return r, nil // a device without a table: no data area at all
	}
	if size > uint32(len(b)) || start > size {
		return r, fmt.Errorf("dm ioctl reply: data %d..%d outside the %d-byte buffer", start, size, len(b))
	}
	r.Data = b[start:size]
	return r, nil
}

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) (string, error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", errors.New("string not terminated")
	}
	return string(b[:i]), nil
}

// parseDMNames reads the struct dm_name_list records of a DM_LIST_DEVICES
// reply, in the kernel's order (which is the order dmsetup prints).
func parseDMNames(data []byte) ([]string, error) {
	if len(data) < dmNameListName || ne.Uint64(data) == 0 {
		return nil, nil // dev 0 in the first record: no devices
	}
	var names []string
	for off := 0; ; {
		if off+dmNameListName > len(data) {
			return nil, fmt.Errorf("dm name list: record at %d past the end (%d bytes)", off, len(data))
		}
		name, err := cString(data[off+dmNameListName:])
		if err != nil {
			return nil, fmt.Errorf("dm name list: record at %d: %w", off, err)
		}
		names = append(names, name)
		next := int(ne.Uint32(data[off+8:]))
		if next == 0 {
			return names, nil
		}
		if next < dmNameListName {
			return nil, fmt.Errorf("dm name list: record at %d: next offset %d too small", off, next)
		}
		off += next
	}
}

// parseDMTargets reads count struct dm_target_spec records (each followed
// by its parameter string) of a DM_TABLE_STATUS reply. Each record's next
// field is an offset from the start of the data area.
func parseDMTargets(data []byte, count uint32) ([]dmTarget, error) {
	out := make([]dmTarget, 0, count)
	off := 0
	for i := uint32(0); i < count; i++ {
		if off < 0 || off+dmSpecSize > len(data) {
			return nil, fmt.Errorf("dm target %d: record at %d past the end (%d bytes)", i, off, len(data))
		}
		s := data[off:]
		typ, err := cString(s[24 : 24+dmMaxTypeName])
		if err != nil {
			return nil, fmt.Errorf("dm target %d: type: %w", i, err)
		}
		params, err := cString(s[dmSpecSize:])
		if err != nil {
			return nil, fmt.Errorf("dm target %d (%s): params: %w", i, typ, err)
		}
		out = append(out, dmTarget{Start: ne.Uint64(s), Length: ne.Uint64(s[8:]), Type: typ, Params: params})
		off = int(ne.Uint32(s[20:]))
	}
	return out, nil
}

// appendDMLines appends a device's lines as `dmsetup table` (table true) or
// `dmsetup status` prints them for all devices: "<name>: <start> <length>
// <target> <params>", and "<name>: " alone for a device without a live
// table. Like dmsetup without --showkeys, the table hides crypt and
// integrity keys behind zeroes.
func appendDMLines(b []byte, name string, targets []dmTarget, table bool) []byte {
	if len(targets) == 0 {
		return append(append(append(b, name...), ": "...), '\n')
	}
	for _, t := range targets {
		b = append(append(b, name...), ": "...)
		b = strconv.AppendUint(b, t.Start, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, t.Length, 10)
		b = append(append(append(b, ' '), t.Type...), ' ')
		p := []byte(t.Params)
		if table {
			hideKeys(t.Type, p)
		}
		b = append(append(b, p...), '\n')
	}
	return b
}

// hideKeys overwrites key material in a crypt or integrity table line with
// '0', as dmsetup does unless --showkeys is given.
func hideKeys(target string, p []byte) {
	switch target {
	case "crypt":
		// "<cipher> <key> ...": zero the key unless it is a kernel keyring
		// reference (":...").
		i := bytes.IndexByte(p, ' ')
		if i < 0 {
			return
		}
		k := p[i+1:]
		if len(k) > 0 && k[0] == ':' {
			return
		}
		zeroWord(k)
	case "integrity":
		for _, opt := range []string{"internal_hash:", "journal_crypt:", "journal_mac:"} {
			i := bytes.Index(p, []byte(opt))
			if i < 0 {
				continue
			}
			rest := p[i+len(opt):]
			j := bytes.IndexAny(rest, " :")
			if j < 0 || rest[j] != ':' {
				continue
			}
			zeroWord(rest[j+1:])
		}
	}
}

// zeroWord sets the bytes of b up to the first space to '0'.
func zeroWord(b []byte) {
	for i := 0; i < len(b) && b[i] != ' '; i++ {
		b[i] = '0'
	}
}

// formatDMMessage is what `dmsetup message` prints for a response: nothing
// without one, the response as it is when empty or ending in a newline, and
// otherwise the response and a newline.
func formatDMMessage(resp []byte, ok bool) []byte {
	if !ok || len(resp) == 0 || resp[len(resp)-1] == '\n' {
		return resp
	}
	return append(resp, '\n')
}

// dmServed says which command forms DMRunner answers in-process, and how:
// "table", "status", or "message" with the device name.
func dmServed(c Cmd) (kind, dev string, ok bool) {
	if c.Name != "dmsetup" {
		return "", "", false
	}
	switch {
	case len(c.Args) == 1 && (c.Args[0] == "table" || c.Args[0] == "status"):
		return c.Args[0], "", true
	case len(c.Args) == 4 && c.Args[0] == "message" && c.Args[2] == "0" && c.Args[3] == "stats":
		return "message", c.Args[1], true
	}
	return "", "", false
}

// fallbackCmd is the dmsetup command run when the ioctls fail: c itself,
// but a status read gets --noflush, the flag the ioctl path sets (dmsetup(8):
// "do not commit thin-pool metadata before reporting statistics"), so the
// fallback reads without writing too. The output is the same; the command
// is recorded and replayed under c's name, as the ioctl path's is.
func fallbackCmd(c Cmd, kind string) Cmd {
	if kind != "status" {
		return c
	}
	c.Args = append(slices.Clone(c.Args), "--noflush")
	return c
}

// errIoctlOff is the fallback reason when DMRunner.NoIoctl is set.
var errIoctlOff = errors.New("dm ioctls turned off (KEEL_DM_IOCTL=off)")

// dmControl is the device-mapper control node the ioctls go to.
const dmControl = "/dev/mapper/control"

// DMRunner answers `dmsetup table`, `dmsetup status` and `dmsetup message
// <dev> 0 stats` with device-mapper ioctls and passes every other command
// to Exec. When an ioctl path fails (no control node, no permission, a
// reply it cannot read) it runs the real dmsetup through Exec instead and
// logs why at debug level. Its output is byte-identical to dmsetup's
// (proved on the real kernel by e2e/probes), so a probe pass recorded
// through it replays the same everywhere. It is safe for concurrent use.
type DMRunner struct {
	// Exec runs every command DMRunner does not serve, and the fallbacks.
	Exec Runner
	// Control is the control node; empty means /dev/mapper/control.
	Control string
	// Log receives one debug line per served or fallen-back command; nil
	// means no logging.
	Log hclog.Logger
	// NoIoctl runs dmsetup for every read (KEEL_DM_IOCTL=off), with the
	// same --noflush the fallback adds.
	NoIoctl bool

	mu    sync.Mutex
	stats DMRunnerStats
}

// DMRunnerStats counts how DMRunner served the dmsetup commands it knows.
type DMRunnerStats struct {
	// Ioctl is the number served in-process.
	Ioctl int
	// Exec is the number that fell back to running dmsetup.
	Exec int
	// LastFallback is the error that caused the latest fallback.
	LastFallback string
}

// Stats returns the counts so far.
func (r *DMRunner) Stats() DMRunnerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// RunStream runs c with consume (Streamer): a dmsetup read as Run serves
// it, any other command through Exec.
func (r *DMRunner) RunStream(ctx context.Context, c Cmd, consume func(next func() ([]byte, bool))) (Result, error) {
	if _, _, ok := dmServed(c); ok {
		res, err := r.Run(ctx, c)
		if err == nil {
			whole(res.Stdout, consume)
		}
		return res, err
	}
	return RunStream(ctx, r.Exec, c, consume)
}

// Run serves c in-process when it is one of the dmsetup reads and the
// ioctls work, and otherwise runs it through Exec.
func (r *DMRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	kind, dev, ok := dmServed(c)
	if !ok {
		return r.Exec.Run(ctx, c)
	}
	if err := ctx.Err(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("%s: %w", c, err)
	}
	control := r.Control
	if control == "" {
		control = dmControl
	}
	var out []byte
	var err error
	if r.NoIoctl {
		err = errIoctlOff
	} else {
		out, err = dmRead(control, kind, dev)
	}
	r.mu.Lock()
	if err != nil {
		r.stats.Exec++
		r.stats.LastFallback = err.Error()
	} else {
		r.stats.Ioctl++
	}
	r.mu.Unlock()
	if err != nil {
		if r.Log != nil {
			r.Log.Debug("dm ioctl failed, running dmsetup", "cmd", c.String(), "error", err)
		}
		return r.Exec.Run(ctx, fallbackCmd(c, kind))
	}
	if r.Log != nil {
		r.Log.Debug("served by dm ioctl", "cmd", c.String(), "bytes", len(out))
	}
	return Result{Stdout: out}, nil
}
