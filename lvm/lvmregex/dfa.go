package lvmregex

import "math/bits"

// dfa is a whole filter as one deterministic automaton over bytes, built
// the way LVM builds its own matcher (libdm/regex/matcher.c): the leaves
// of every entry's parse tree are positions, each with the positions that
// may follow it, and a state is the set of positions the bytes read so far
// can end in. It reads bytes, as LVM's matcher does (Go's regexp reads
// UTF-8 runes: the two agree on ASCII names). One pass over a name finds
// the first entry that matches anywhere in it, where the entries' regexes
// cost a backtracking run each: a check judges the declared filter over
// every alias of thousands of VM disks, after LVM's report, on the
// check's critical path.
type dfa struct {
	class  [256]uint8 // byte → its class: bytes no position tells apart share one
	nclass int
	next   []int32 // state*nclass + class → next state
	// accept[s] is the lowest entry with a position of state s among its
	// last positions (a match of that entry ends at the byte just read),
	// or -1.
	accept []int32
	// always is the lowest entry whose pattern matches the empty string,
	// and so every name, or -1.
	always int32
}

// dfaMaxStates bounds the automaton; a filter that needs more states (an
// adversarial one: Proxmox's filter with the VM-disk reject needs tens,
// fifty exact by-id names a few hundred) is matched entry by entry.
const dfaMaxStates = 4096

// bitset is a set of positions.
type bitset []uint64

func newBitset(n int) bitset   { return make(bitset, (n+63)/64) }
func (b bitset) add(i int)     { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clone() bitset { return append(bitset(nil), b...) }

func (b bitset) or(o bitset) {
	for i := range b {
		b[i] |= o[i]
	}
}

// each calls f for every position in b, in order.
func (b bitset) each(f func(i int)) {
	for w, word := range b {
		for word != 0 {
			f(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
}

// key is b as a map key.
func (b bitset) key() string { return string(b.appendKey(nil)) }

// appendKey appends b's key to buf.
func (b bitset) appendKey(buf []byte) []byte {
	for _, w := range b {
		for i := 0; i < 64; i += 8 {
			buf = append(buf, byte(w>>i))
		}
	}
	return buf
}

// positions holds the leaves of all entries' trees.
type positions struct {
	sets   []charset
	entry  []int32
	follow [][]int
}

// walk numbers n's leaves as positions of entry and records which may
// follow which (the followpos of the dragon book, the same construction
// as matcher.c's _calc_functions); it returns whether n matches the empty
// string and its first and last positions.
func (ps *positions) walk(n *node, entry int32) (nullable bool, first, last []int) {
	switch n.kind {
	case nSet:
		p := len(ps.sets)
		ps.sets = append(ps.sets, n.set)
		ps.entry = append(ps.entry, entry)
		ps.follow = append(ps.follow, nil)
		return false, []int{p}, []int{p}
	case nCat:
		ln, lf, ll := ps.walk(n.left, entry)
		rn, rf, rl := ps.walk(n.right, entry)
		for _, p := range ll {
			ps.follow[p] = append(ps.follow[p], rf...)
		}
		first, last = lf, rl
		if ln {
			first = append(append([]int(nil), lf...), rf...)
		}
		if rn {
			last = append(append([]int(nil), ll...), rl...)
		}
		return ln && rn, first, last
	case nAlt:
		ln, lf, ll := ps.walk(n.left, entry)
		rn, rf, rl := ps.walk(n.right, entry)
		return ln || rn, append(append([]int(nil), lf...), rf...), append(append([]int(nil), ll...), rl...)
	default: // nStar, nPlus, nQuest
		ln, lf, ll := ps.walk(n.left, entry)
		if n.kind != nQuest {
			for _, p := range ll {
				ps.follow[p] = append(ps.follow[p], lf...)
			}
		}
		return ln || n.kind != nPlus, lf, ll
	}
}

// newDFA builds the automaton of trees, one per entry in order, or returns
// nil when it would exceed dfaMaxStates.
func newDFA(trees []*node) *dfa {
	d := &dfa{always: -1}
	ps := &positions{}
	var starts []int
	var lastOf []int32 // position → its entry when it is a last position, else -1
	for i, t := range trees {
		nullable, first, last := ps.walk(t, int32(i))
		if nullable && d.always < 0 {
			d.always = int32(i)
		}
		starts = append(starts, first...)
		for len(lastOf) < len(ps.sets) {
			lastOf = append(lastOf, -1)
		}
		for _, p := range last {
			lastOf[p] = int32(i)
		}
	}
	n := len(ps.sets)

	// Bytes that belong to the same positions' sets are one class; in[c]
	// is the set of positions whose set holds class c's bytes.
	classOf := map[string]uint8{}
	var in []bitset
	for c := 0; c < 256; c++ {
		sig := newBitset(n)
		for p := range ps.sets {
			if ps.sets[p].has(byte(c)) {
				sig.add(p)
			}
		}
		k := sig.key()
		id, ok := classOf[k]
		if !ok {
			id = uint8(len(in)) // at most 256 classes: ids 0-255
			classOf[k] = id
			in = append(in, sig)
		}
		d.class[c] = id
	}
	d.nclass = len(in)

	// Unanchored: every entry may start at every byte, so each step may
	// enter the first positions as well as follow the state's own.
	startSet := newBitset(n)
	for _, p := range starts {
		startSet.add(p)
	}
	follow := make([]bitset, n)
	for p := range follow {
		follow[p] = newBitset(n)
		for _, q := range ps.follow[p] {
			follow[p].add(q)
		}
	}
	// The work is states × classes × n/64 words: a filter of many long
	// entries (tens of exact by-id names) builds in milliseconds.
	ids := map[string]int32{}
	var states []bitset
	var keyBuf []byte
	intern := func(s bitset) (int32, bool) {
		keyBuf = s.appendKey(keyBuf[:0])
		if id, ok := ids[string(keyBuf)]; ok {
			return id, true
		}
		if len(states) == dfaMaxStates {
			return 0, false
		}
		id := int32(len(states))
		ids[string(keyBuf)] = id
		s = s.clone()
		states = append(states, s)
		acc := int32(-1)
		s.each(func(p int) {
			if e := lastOf[p]; e >= 0 && (acc < 0 || e < acc) {
				acc = e
			}
		})
		d.accept = append(d.accept, acc)
		d.next = append(d.next, make([]int32, d.nclass)...)
		return id, true
	}
	reach, to := newBitset(n), newBitset(n)
	intern(to) // state 0: nothing read yet
	for s := 0; s < len(states); s++ {
		copy(reach, startSet)
		states[s].each(func(p int) { reach.or(follow[p]) })
		for c := range in {
			for w := range to {
				to[w] = reach[w] & in[c][w]
			}
			id, ok := intern(to)
			if !ok {
				return nil
			}
			d.next[s*d.nclass+c] = id
		}
	}
	return d
}

// firstMatch returns the lowest entry of d that matches name anywhere (^
// and $ at its ends, as wrap frames it), or -1.
func firstMatch[T string | []byte](d *dfa, name T) int {
	best := d.always
	if best == 0 {
		return 0
	}
	// From state 0, read the ^ marker, the name, then the $ marker.
	s := int(d.next[d.class[hatChar]])
	if a := d.accept[s]; a >= 0 && (best < 0 || a < best) {
		best = a
	}
	for i := 0; i <= len(name) && best != 0; i++ {
		c := byte(dollarChar)
		if i < len(name) {
			c = name[i]
		}
		s = int(d.next[s*d.nclass+int(d.class[c])])
		if a := d.accept[s]; a >= 0 && (best < 0 || a < best) {
			best = a
		}
	}
	return int(best)
}
