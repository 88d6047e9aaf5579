package jupyter

import (
	"encoding/json"
	"testing"
)

// The answers ipykernel 6.17 (IPython 8.5, a new history database) gave
// for these cells: tests/jupyter/test_ripple_fidelity.py compares the two
// kernels live; this pins the rules.
func TestHistoryAnswersAsIPython(t *testing.T) {
	all := []historyEntry{
		{count: 1, input: "1+2+3", parsed: "1+2+3", output: "6", hasOut: true},
		{count: 2, input: "%time y = 1", parsed: "get_ipython().run_line_magic('time', 'y = 1')"},
		{count: 3, input: "x = 'a'", parsed: "x = 'a'"},
		{count: 4, input: "x", parsed: "x", output: "'a'", hasOut: true},
		{count: 5, input: "x = 'a'", parsed: "x = 'a'"},
	}
	for _, c := range []struct {
		query, want string
	}{
		{`{"hist_access_type": "tail", "n": 2, "raw": true}`, `[[1,4,"x"],[1,5,"x = 'a'"]]`},
		{`{"hist_access_type": "tail", "n": 1, "output": true, "raw": true}`, `[[1,5,["x = 'a'",null]]]`},
		{`{"hist_access_type": "range", "session": 0, "start": 0, "stop": 2, "raw": true}`, `[[0,0,""],[0,1,"1+2+3"]]`},
		{`{"hist_access_type": "range", "session": 0, "start": -2, "output": true, "raw": true}`, `[[0,4,["x","'a'"]],[0,5,["x = 'a'",null]]]`},
		{`{"hist_access_type": "range", "session": 0, "start": 1, "stop": -3, "raw": false}`, `[[0,1,"1+2+3"],[0,2,"get_ipython().run_line_magic('time', 'y = 1')"]]`},
		{`{"hist_access_type": "range", "session": 1, "start": 1, "stop": 2, "raw": true}`, `[[1,1,"1+2+3"]]`},
		{`{"hist_access_type": "range", "session": 7, "start": 1, "raw": true}`, `[]`},
		{`{"hist_access_type": "search", "pattern": "x*", "raw": true}`, `[[1,3,"x = 'a'"],[1,4,"x"],[1,5,"x = 'a'"]]`},
		{`{"hist_access_type": "search", "pattern": "x*", "unique": true, "raw": true}`, `[[1,4,"x"],[1,5,"x = 'a'"]]`},
		{`{"hist_access_type": "search", "pattern": "*", "n": 1, "output": true, "raw": true}`, `[[1,5,["x = 'a'",null]]]`},
		{`{"hist_access_type": "search", "pattern": "%time*", "raw": false}`, `[[1,2,"get_ipython().run_line_magic('time', 'y = 1')"]]`},
		{`{"hist_access_type": "bogus"}`, `[]`},
	} {
		var q historyQuery
		if err := json.Unmarshal([]byte(c.query), &q); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(q.answer(all))
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.query, got, c.want)
		}
	}
}
