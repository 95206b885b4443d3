package probes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// parseDMLines parses `dmsetup table` or `dmsetup status` output
// ("<name>: <start> <length> <target> <args>", one line per target
// segment) into devices by name. which names the command for errors. Lines
// end in "\n" or "\r\n"; a line of 1 MiB or more is an error.
func parseDMLines(which string, b []byte) (map[string][]model.DMLine, error) {
	// One string for the whole output: names, targets and arguments are
	// parts of it, and one array holds every device's first line.
	text := string(b)
	lines := strings.Count(text, "\n") + 1
	out := make(map[string][]model.DMLine, lines)
	first := make([]model.DMLine, 0, lines)
	for n := 1; text != ""; n++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimSuffix(line, "\r")
		if len(line) >= maxDMLine {
			return nil, fmt.Errorf("%s: line %d: longer than %d bytes", which, n, maxDMLine)
		}
		if strings.TrimSpace(line) == "" || line == "No devices found" {
			continue
		}
		name, rest, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("%s: line %d: no \"name: \" prefix", which, n)
		}
		if strings.TrimSpace(rest) == "" {
			// A device with no live table (created, never loaded: an LVM
			// command killed half-way leaves one) prints its name and
			// nothing else (lvm2 libdm/dm-tools/dmsetup.c, _status).
			if _, ok := out[name]; !ok {
				out[name] = nil
			}
			continue
		}
		f0, rest, _ := strings.Cut(strings.TrimSpace(rest), " ")
		f1, rest, ok := strings.Cut(rest, " ")
		if !ok {
			return nil, fmt.Errorf("%s: line %d (%s): want start, length and target", which, n, name)
		}
		target, args, _ := strings.Cut(rest, " ")
		start, err1 := strconv.ParseUint(f0, 10, 64)
		length, err2 := strconv.ParseUint(f1, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: line %d (%s): field start/length: not numbers", which, n, name)
		}
		l := model.DMLine{Start: start, Length: length, Target: target, Args: args}
		if prev, ok := out[name]; ok {
			out[name] = append(prev, l)
		} else {
			first = append(first, l)
			out[name] = first[len(first)-1 : len(first) : len(first)]
		}
	}
	return out, nil
}

// maxDMLine bounds a line of dmsetup output.
const maxDMLine = 1 << 20

// parseLVMConfig parses `lvmconfig --typeconfig full` output into
// "section/key" → raw value. Nested sections join with '/'.
func parseLVMConfig(b []byte) (map[string]string, error) {
	out := map[string]string{}
	var stack []string
	for n, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case t == "}":
			if len(stack) == 0 {
				return nil, fmt.Errorf("lvmconfig: line %d: '}' without a section", n+1)
			}
			stack = stack[:len(stack)-1]
		case strings.HasSuffix(t, "{"):
			name := strings.TrimSpace(strings.TrimSuffix(t, "{"))
			if name == "" || strings.ContainsAny(name, "=\"") {
				return nil, fmt.Errorf("lvmconfig: line %d: bad section name %q", n+1, name)
			}
			stack = append(stack, name)
		default:
			k, v, ok := strings.Cut(t, "=")
			if !ok {
				return nil, fmt.Errorf("lvmconfig: line %d: want key=value, got %q", n+1, t)
			}
			k = strings.TrimSpace(k)
			if k == "" {
				return nil, fmt.Errorf("lvmconfig: line %d: empty key", n+1)
			}
			out[strings.Join(append(append([]string{}, stack...), k), "/")] = strings.TrimSpace(v)
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("lvmconfig: section %s not closed", strings.Join(stack, "/"))
	}
	return out, nil
}

// parseMeminfo reads MemTotal and MemAvailable (required), AnonPages, Shmem
// and SwapFree (optional) from /proc/meminfo.
func parseMeminfo(b []byte) (model.Memory, error) {
	var m model.Memory
	fields := map[string]*uint64{"MemTotal": &m.TotalBytes, "MemAvailable": &m.AvailableBytes,
		"AnonPages": &m.AnonBytes, "Shmem": &m.ShmemBytes, "SwapFree": &m.SwapFreeBytes}
	var seen int
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		dst := fields[k]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return m, fmt.Errorf("/proc/meminfo: field %s: empty", k)
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/meminfo: field %s: %w", k, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		*dst = n
		if k == "MemTotal" || k == "MemAvailable" {
			seen++
		}
	}
	if seen != 2 {
		return m, fmt.Errorf("/proc/meminfo: MemTotal or MemAvailable missing")
	}
	return m, nil
}

// parseCPUList counts the CPUs in a kernel CPU list ("0-3,6").
func parseCPUList(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, fmt.Errorf("cpu list: empty")
	}
	total := 0
	for _, part := range strings.Split(s, ",") {
		a, z, isRange := strings.Cut(part, "-")
		lo, err := strconv.Atoi(a)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(z); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if hi < lo {
			return 0, fmt.Errorf("cpu list %q: range %s is backwards", s, part)
		}
		total += hi - lo + 1
	}
	return total, nil
}

// parseStorageCfg parses Proxmox's /etc/pve/storage.cfg: "type: id" lines,
// each followed by indented "key value" option lines.
func parseStorageCfg(b []byte) (*model.Proxmox, error) {
	p := &model.Proxmox{}
	var cur *model.PVEStorage
	for n, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			typ, id, ok := strings.Cut(t, ":")
			if !ok || strings.TrimSpace(id) == "" {
				return nil, fmt.Errorf("storage.cfg: line %d: want \"type: id\"", n+1)
			}
			p.Storages = append(p.Storages, model.PVEStorage{Type: strings.TrimSpace(typ), ID: strings.TrimSpace(id), Options: map[string]string{}})
			cur = &p.Storages[len(p.Storages)-1]
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("storage.cfg: line %d: option before any storage", n+1)
		}
		k, v, _ := strings.Cut(t, " ")
		v = strings.TrimSpace(v)
		cur.Options[k] = v
		switch k {
		case "vgname":
			cur.VG = v
		case "saferemove":
			cur.Saferemove = v == "1"
		case "saferemove_throughput":
			cur.SaferemoveThroughput = v
		case "saferemove_stepsize":
			cur.SaferemoveStepsize = v
		case "saferemove_discard":
			cur.SaferemoveDiscard = v == "1"
		}
	}
	return p, nil
}
