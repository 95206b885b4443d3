package probes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// buildMultipath finds the multipath maps among the dm devices (a table
// whose target is "multipath"), parses their status into path groups and
// paths, and names each path by its kernel name: the map's slaves in
// /sys/block/<dm-N>/slaves, each slave's device number read from
// /sys/block/<slave>/dev and matched with the number the status prints.
// Only the slaves of multipath maps are read, so a host without maps reads
// nothing more.
func buildMultipath(fsys hostio.FS, h *model.Host) {
	for name, d := range h.DM {
		if len(d.Table) == 0 || d.Table[0].Target != "multipath" {
			continue
		}
		m := &model.Multipath{Name: name}
		for k, q := range h.Queues {
			if q.DMName == name && strings.HasPrefix(k, "dm-") {
				m.Device, m.UUID = k, q.DMUUID
			}
		}
		switch {
		case len(d.Status) == 0:
			m.Errors = append(m.Errors, fmt.Sprintf("multipath map %s: no status line", name))
		default:
			groups, err := parseMultipathStatus(d.Status[0].Args)
			if err != nil {
				m.Errors = append(m.Errors, fmt.Sprintf("multipath map %s: %v", name, err))
			}
			m.Groups = groups
		}
		if q := h.Queues[m.Device]; q != nil {
			byDev := map[string]string{}
			for _, s := range q.Slaves {
				if n, err := readTrim(fsys, sysBlock+"/"+s+"/dev"); err == nil {
					byDev[n] = s
				}
			}
			for gi := range m.Groups {
				for pi := range m.Groups[gi].Paths {
					p := &m.Groups[gi].Paths[pi]
					p.Device = byDev[p.Dev]
				}
			}
		}
		if h.Multipath == nil {
			h.Multipath = map[string]*model.Multipath{}
		}
		h.Multipath[name] = m
	}
}

// parseMultipathStatus parses the arguments of a multipath target's status
// line (after "<start> <length> multipath"), as drivers/md/dm-mpath.c
// (multipath_status, STATUSTYPE_INFO) writes them and multipath-tools
// reads them (libmultipath/dmparser.c, disassemble_status):
//
//	<#features> <feature>... <#hw handler args> <arg>... <#groups> <next group>
//	then per group: <A|E|D> <#group selector args> <arg>... <#paths> <#path selector args>
//	then per path:  <major:minor> <A|F> <fail count> <path selector arg>...
//
// The groups parsed before an error are returned with it.
func parseMultipathStatus(args string) ([]model.PathGroup, error) {
	f := strings.Fields(args)
	i := 0
	next := func(what string) (string, error) {
		if i >= len(f) {
			return "", fmt.Errorf("status ends before %s", what)
		}
		i++
		return f[i-1], nil
	}
	count := func(what string) (int, error) {
		s, err := next(what)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > len(f) {
			return 0, fmt.Errorf("%s: %q is not a count", what, s)
		}
		return n, nil
	}
	skip := func(what string) error {
		n, err := count(what)
		if err != nil {
			return err
		}
		if i+n > len(f) {
			return fmt.Errorf("status ends inside %s", what)
		}
		i += n
		return nil
	}
	if err := skip("the features"); err != nil {
		return nil, err
	}
	if err := skip("the hardware handler's arguments"); err != nil {
		return nil, err
	}
	ngroups, err := count("the number of path groups")
	if err != nil {
		return nil, err
	}
	if _, err := next("the next path group"); err != nil {
		return nil, err
	}
	groups := make([]model.PathGroup, 0, ngroups)
	for g := 1; g <= ngroups; g++ {
		state, err := next(fmt.Sprintf("group %d's state", g))
		if err != nil {
			return groups, err
		}
		if state != "A" && state != "E" && state != "D" {
			return groups, fmt.Errorf("group %d: state %q is not A, E or D", g, state)
		}
		if err := skip(fmt.Sprintf("group %d's selector arguments", g)); err != nil {
			return groups, err
		}
		npaths, err := count(fmt.Sprintf("group %d's number of paths", g))
		if err != nil {
			return groups, err
		}
		nsel, err := count(fmt.Sprintf("group %d's number of path selector arguments", g))
		if err != nil {
			return groups, err
		}
		pg := model.PathGroup{State: state}
		for p := 1; p <= npaths; p++ {
			if i+3+nsel > len(f) {
				return groups, fmt.Errorf("group %d: status ends inside path %d", g, p)
			}
			dev, st, fc := f[i], f[i+1], f[i+2]
			i += 3 + nsel
			if st != "A" && st != "F" {
				return groups, fmt.Errorf("group %d path %s: state %q is not A or F", g, dev, st)
			}
			n, err := strconv.ParseUint(fc, 10, 64)
			if err != nil {
				return groups, fmt.Errorf("group %d path %s: fail count %q is not a number", g, dev, fc)
			}
			pg.Paths = append(pg.Paths, model.MultipathPath{Dev: dev, Active: st == "A", FailCount: n})
		}
		groups = append(groups, pg)
	}
	return groups, nil
}
