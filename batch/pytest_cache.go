package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// pytest's cache across the kernels: each kernel's pytest reads the cache
// (--lf, --ff, --nf and --sw select and order the items in every kernel as
// in a serial session), but a kernel is a worker and writes nothing (as
// under xdist). The run writes what a serial session's plugins would have
// written at its end (pytest_cache.go), from the merged results:
//   - cache/lastfailed (LFPlugin): the cached dict, then each collection
//     report that failed added, each test file that now collects removed;
//     then, in pytest's order, each test that failed or errored added and
//     each that passed, skipped, xfailed or xpassed removed (a test pytest
//     never ran, deselected or after -x, stays as it was); written when
//     it changed;
//   - cache/nodeids (NFPlugin): the cached ids and every collected item's,
//     sorted; not with --collect-only;
//   - cache/stepwise (StepwisePlugin, --sw): the first test that failed
//     (after the first with --sw-skip), else the cached one unless it
//     passed; without --sw, an empty list, as pytest writes it.
//
// The files are JSON as pytest's Cache.set writes them (2-space indent,
// keys in the dict's order).

// pytestCache is what the kernel says of pytest's cache plugin.
type pytestCache struct {
	Dir          string `json:"dir"`
	Stepwise     bool   `json:"stepwise"`
	StepwiseSkip bool   `json:"stepwiseSkip"`
}

// orderedSet is a dict of keys to true in insertion order (pytest's
// lastfailed).
type orderedSet struct {
	keys []string
	in   map[string]bool
}

func (o *orderedSet) add(k string) {
	if !o.in[k] {
		o.in[k] = true
		o.keys = append(o.keys, k)
	}
}

func (o *orderedSet) remove(k string) {
	if o.in[k] {
		delete(o.in, k)
		o.keys = slices.DeleteFunc(o.keys, func(x string) bool { return x == k })
	}
}

// readLastFailed reads cache/lastfailed, keys in the file's order.
func readLastFailed(path string) *orderedSet {
	o := &orderedSet{in: map[string]bool{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return o
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return o
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return &orderedSet{in: map[string]bool{}}
		}
		var v any
		if dec.Decode(&v) != nil {
			return &orderedSet{in: map[string]bool{}}
		}
		if k, ok := t.(string); ok {
			o.add(k)
		}
	}
	return o
}

// pythonJSON is v as Python's json.dumps(v, ensure_ascii=False, indent=2).
func pythonJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (o *orderedSet) json() []byte {
	if len(o.keys) == 0 {
		return []byte("{}")
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range o.keys {
		key, _ := json.Marshal(k)
		b.WriteString("  " + string(key) + ": true")
		if i < len(o.keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}")
	return b.Bytes()
}

// writePytestCache writes the cache values a serial pytest session would
// have written for the run: s its collection, rep its results (the first
// pre of them the collection reports').
func writePytestCache(spec *pytestCache, s suite, rep *Report, pre int, collectOnly bool) error {
	dir := filepath.Join(spec.Dir, "v", "cache")
	lfPath := filepath.Join(dir, "lastfailed")
	lf := readLastFailed(lfPath)
	before := string(lf.json())
	files := map[string]bool{}
	for _, it := range s.items {
		files[it.Path] = true
	}
	for _, r := range s.reports {
		if r.Status == string(StatusError) {
			lf.add(r.NodeID)
		}
	}
	for _, k := range slices.Clone(lf.keys) {
		if !strings.Contains(k, "::") && files[k] {
			lf.remove(k) // the file collects now
		}
	}
	stepwise := readStepwise(filepath.Join(dir, "stepwise"))
	skipFirst := spec.StepwiseSkip
	for _, r := range rep.Results[min(pre, len(rep.Results)):] {
		switch {
		case r.Status.Failing():
			lf.add(r.Entry.NodeID)
			if skipFirst {
				skipFirst = false
			} else if stepwise.first == "" {
				stepwise.first = r.Entry.NodeID
			}
		case r.Status == StatusPassed, r.Status == StatusSkipped, r.Status == StatusXFailed, r.Status == StatusXPassed:
			lf.remove(r.Entry.NodeID)
			if r.Entry.NodeID == stepwise.cached && r.Status != StatusSkipped {
				stepwise.passed = true
			}
		}
	}
	var errs []error
	write := func(name string, data []byte) {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			errs = append(errs, err)
			return
		}
		if err := writeFileAtomic(filepath.Join(dir, name), data); err != nil {
			errs = append(errs, err)
		}
	}
	if after := lf.json(); string(after) != before {
		write("lastfailed", after)
	}
	if !collectOnly {
		ids := readStrings(filepath.Join(dir, "nodeids"))
		for _, it := range s.items {
			ids = append(ids, it.NodeID)
		}
		slices.Sort(ids)
		write("nodeids", pythonJSON(slices.Compact(ids)))
	}
	if !spec.Stepwise {
		write("stepwise", []byte("[]"))
	} else {
		write("stepwise", pythonJSON(stepwise.value()))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: pytest's cache: %w", ErrReport, errs[0])
	}
	return nil
}

// stepwiseState is StepwisePlugin's lastfailed over a run.
type stepwiseState struct {
	cached string // the cached test, "" for none
	passed bool   // the cached test passed in this run
	first  string // the first test that failed in this run
}

func (s stepwiseState) value() any {
	switch {
	case s.first != "":
		return s.first
	case s.cached != "" && !s.passed:
		return s.cached
	}
	return nil
}

func readStepwise(path string) stepwiseState {
	var v any
	data, err := os.ReadFile(path)
	if err == nil && json.Unmarshal(data, &v) == nil {
		if s, ok := v.(string); ok {
			return stepwiseState{cached: s}
		}
	}
	return stepwiseState{}
}

func readStrings(path string) []string {
	var v []string
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &v)
	}
	return v
}
