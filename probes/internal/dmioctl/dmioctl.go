// Package dmioctl reads device-mapper tables, statuses and messages through
// the ioctls on /dev/mapper/control and prints them as dmsetup does, byte
// for byte. It is a leaf: it knows nothing of commands or runners.
package dmioctl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Layout of the kernel's struct dm_ioctl and its trailing records
// (include/uapi/linux/dm-ioctl.h, interface version 4).
const (
	HeaderSize     = 312 // sizeof(struct dm_ioctl)
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
	IoctlListDevices   = 0xc138fd02 // DM_LIST_DEVICES
	dmIoctlTableStatus = 0xc138fd0c // DM_TABLE_STATUS
	dmIoctlTargetMsg   = 0xc138fd0e // DM_TARGET_MSG
)

var (
	dmVersion4    = [3]uint32{4, 0, 0}
	dmVersionMsg4 = [3]uint32{4, 2, 0}
)

// Caller performs one device-mapper ioctl (req) on a request built by
// dmRequest and returns the kernel's reply buffer, at least up to its
// data_size, after any buffer-full retries. The buffer may be the
// caller's own, reused by its next call: what a reply holds is copied out
// (as strings) before the next call. The live one is ioctl on the control
// node; tests replay replies captured in the test guest.
type Caller func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error)

// reply performs one call and parses the reply's header.
func (call Caller) reply(req uint32, version [3]uint32, name string, flags uint32, payload []byte) (Reply, error) {
	b, err := call(req, version, name, flags, payload)
	if err != nil {
		return Reply{}, err
	}
	return ParseReply(b)
}

// Format produces what `dmsetup <kind>` prints (kind "table" or "status"
// for all devices, or "message" with dev for `dmsetup message dev 0 stats`)
// from the ioctl replies call returns.
func Format(call Caller, kind, dev string) ([]byte, error) {
	if kind == "message" {
		return dmMessage(call, dev, "stats")
	}
	rep, err := call.reply(IoctlListDevices, dmVersion4, "", dmFlagExists, nil)
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
		out = AppendLines(out, name, targets, table)
	}
	return out, nil
}

// dmMessage sends message to sector 0 of dev and formats the response.
func dmMessage(call Caller, dev, message string) ([]byte, error) {
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

// Target is one target line of a device's table or status.
type Target struct {
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
	if HeaderSize+len(payload) > n {
		return nil, fmt.Errorf("payload of %d bytes does not fit a %d-byte buffer", len(payload), n)
	}
	clear(b)
	for i, v := range version {
		ne.PutUint32(b[offVersion+4*i:], v)
	}
	ne.PutUint32(b[offDataSize:], uint32(n))
	ne.PutUint32(b[offDataStart:], HeaderSize)
	ne.PutUint32(b[offFlags:], flags)
	copy(b[offName:], name)
	copy(b[HeaderSize:], payload)
	return b, nil
}

// Reply is the kernel's answer: the header fields keel reads and the data
// area (from data_start to data_size).
type Reply struct {
	Flags       uint32
	TargetCount uint32
	Data        []byte
}

// ParseReply reads the header of a returned dm_ioctl buffer.
func ParseReply(b []byte) (Reply, error) {
	if len(b) < HeaderSize {
		return Reply{}, fmt.Errorf("dm ioctl reply: %d bytes, want at least %d", len(b), HeaderSize)
	}
	size := ne.Uint32(b[offDataSize:])
	start := ne.Uint32(b[offDataStart:])
	r := Reply{Flags: ne.Uint32(b[offFlags:]), TargetCount: ne.Uint32(b[offTargetCount:])}
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
func parseDMTargets(data []byte, count uint32) ([]Target, error) {
	out := make([]Target, 0, count)
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
		out = append(out, Target{Start: ne.Uint64(s), Length: ne.Uint64(s[8:]), Type: typ, Params: params})
		off = int(ne.Uint32(s[20:]))
	}
	return out, nil
}

// AppendLines appends a device's lines as `dmsetup table` (table true) or
// `dmsetup status` prints them for all devices: "<name>: <start> <length>
// <target> <params>", and "<name>: " alone for a device without a live
// table. Like dmsetup without --showkeys, the table hides crypt and
// integrity keys behind zeroes.
func AppendLines(b []byte, name string, targets []Target, table bool) []byte {
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

// Control is the device-mapper control node the ioctls go to.
const Control = "/dev/mapper/control"
