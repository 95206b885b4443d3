package plan

import (
	"maps"
	"slices"
)

// auditUndeclared judges the VDO and thin pools the desired state does not
// declare (in an undeclared VG, or beside the declared pools of a declared
// one) with the rules of Audit, so that a desired state declaring nothing
// does not make a host healthy by silence: keel check -c agent.cue finds on
// such a host what keel check --audit finds. Each of their findings is
// marked Undeclared and keeps its catalogue severity: an overcommitted VDO
// pool fills and fails its VMs whether or not anyone declared it. Like
// Audit, it plans no action: keel changes nothing the desired state does
// not name. agent.auditUndeclared false turns it off.
func (p *planner) auditUndeclared() {
	if !p.d.Agent.AuditsUndeclared() {
		return
	}
	was := p.audit
	p.audit = true // audit's wording and no action, as in Audit
	defer func() { p.audit = was }()
	dataOf := p.thinOfDataVDO()
	for _, key := range slices.Sorted(maps.Keys(p.h.VDOPools)) {
		pool := p.h.VDOPools[key]
		_, declared := p.d.VolumeGroups[pool.VG].VDOPools[pool.Name]
		if tp := dataOf[key]; tp != nil {
			// A thin pool's data: judged with that thin pool
			// (planDataVDO when it is declared).
			_, declared = p.d.VolumeGroups[tp.VG].ThinPools[tp.Name]
		}
		p.auditIfUndeclared(declared, func() { p.auditVDO(pool) })
	}
	for _, key := range slices.Sorted(maps.Keys(p.h.ThinPools)) {
		tp := p.h.ThinPools[key]
		_, declared := p.d.VolumeGroups[tp.VG].ThinPools[tp.Name]
		p.auditIfUndeclared(declared, func() { p.auditThin(tp) })
	}
}

// auditIfUndeclared runs audit on a pool the desired state does not
// declare and marks what it found as findings on an undeclared object.
func (p *planner) auditIfUndeclared(declared bool, audit func()) {
	if declared {
		return
	}
	start := len(p.findings)
	audit()
	for i := start; i < len(p.findings); i++ {
		p.findings[i].Undeclared = true
	}
}
