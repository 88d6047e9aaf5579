package batch

// picker chooses which entry starts next so that entries of one module
// stay on one kernel (module affinity): each kernel compiles and imports a
// module once, before its first entry there (engine loadEntryModule), so
// spreading a module's entries over every kernel made every kernel pay for
// every module. It works with the engine's slot choice: a new context
// goes to the slot with the fewest contexts, which is the slot of the
// entry that just ended (its context is destroyed first) or, while the
// pool fills, the next slot in order.
//
// Owned by the dispatcher's goroutine, like the dispatcher.
type picker struct {
	queues  map[string][]int // module -> its unstarted entries, in report order
	modules []string         // modules in report order of their first entry
	active  map[string]int   // module -> its entries running now
	left    int              // unstarted entries
}

func newPicker(entries []Entry) *picker {
	p := &picker{queues: make(map[string][]int), active: make(map[string]int), left: len(entries)}
	for i := range entries {
		m := entries[i].Pointer.Module
		if _, ok := p.queues[m]; !ok {
			p.modules = append(p.modules, m)
		}
		p.queues[m] = append(p.queues[m], i)
	}
	return p
}

// take removes and returns the next entry to start on a kernel that last
// ran prefer's entries ("" when it ran none): the next of prefer's
// module, else the first module no kernel is running, else the module
// with the most entries left (another kernel shares it). It must not be
// called with nothing left.
func (p *picker) take(prefer string) int {
	m := prefer
	if len(p.queues[m]) == 0 {
		m = ""
		for _, cand := range p.modules {
			if len(p.queues[cand]) > 0 && p.active[cand] == 0 {
				m = cand
				break
			}
		}
	}
	if m == "" {
		for _, cand := range p.modules {
			if len(p.queues[cand]) > len(p.queues[m]) {
				m = cand
			}
		}
	}
	i := p.queues[m][0]
	p.queues[m] = p.queues[m][1:]
	p.left--
	return i
}
