package protocol

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestInnerValueBadInputNamesTheField: a kernel's malformed inner value
// is refused with the field at fault, not dropped.
func TestInnerValueBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ json, path, problem string }{
		{`{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"count":-1}`, "inner[0].count", `expected an integer >= 0, got "-1"`},
		{`{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"count":"3"}`, "inner[0].count", "expected integer, got string"},
		{`{"count":3}`, "inner[0].range", "missing required field"},
	} {
		raw := `{"expressionId":"m:f/#1","profilingInfo":[],"fromCache":false,"payload":{"type":"Value"},"inner":[` + tt.json + `]}`
		var u ExpressionUpdate
		err := json.Unmarshal([]byte(raw), &u)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tt.path {
			t.Errorf("%s: error %v, want a FieldError at %s", tt.json, err, tt.path)
			continue
		}
		if fe.Problem != tt.problem {
			t.Errorf("%s: problem %q, want %q", tt.json, fe.Problem, tt.problem)
		}
	}
}

func TestInnerValuesCloneSharesNothing(t *testing.T) {
	t.Parallel()
	u := ExpressionUpdate{ExpressionID: "m:f/#1", Payload: ValuePayload("None"), Inner: []InnerValue{{Preview: "1", Count: 2}}}
	c := u.Clone()
	c.Inner[0].Preview, c.Inner[0].Count = "changed", 9
	if u.Inner[0].Preview != "1" || u.Inner[0].Count != 2 {
		t.Errorf("Clone shares the inner values: %+v", u.Inner)
	}
}
