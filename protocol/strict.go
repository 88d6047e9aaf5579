package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// This file is the strict decoder behind every params type. encoding/json
// alone cannot say which required field is missing, and its type errors name
// Go types; clients need "params.stackItem.type: missing required field". So
// each type decodes itself field by field through object below, which records
// the first problem together with the field's full path. Unknown fields are
// ignored; null counts as absent for optional fields and as a wrong type for
// required ones.

// FieldError is a field that is missing or malformed.
type FieldError struct {
	// Path is the field's path below the decoded value, in JavaScript
	// notation: "stackItem.methodPointer.module", "edit.edits[2].range".
	// Empty means the value itself.
	Path string
	// Problem says what is wrong: "missing required field",
	// "expected string, got number".
	Problem string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

// Params is implemented by the params type of every client method (see
// NewParams).
type Params interface {
	json.Unmarshaler
	decode(raw json.RawMessage, path string) *FieldError
}

var emptyObject = json.RawMessage("{}")

// DecodeParams decodes a request's params into p. Absent or null params
// decode as {} (so a method whose fields are all optional accepts them).
// The error is an *Error with CodeInvalidParams whose message names the
// field at fault: "params.contextId: expected string, got number".
func DecodeParams(raw json.RawMessage, p Params) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = emptyObject
	}
	if fe := p.decode(raw, ""); fe != nil {
		return InvalidParams(fe.Path, fe.Problem)
	}
	return nil
}

// unmarshalWith adapts a decode method to json.Unmarshaler; it keeps a nil
// *FieldError from becoming a non-nil error.
func unmarshalWith(raw []byte, decode func(json.RawMessage, string) *FieldError) error {
	if fe := decode(bytes.TrimSpace(raw), ""); fe != nil {
		return fe
	}
	return nil
}

// jsonKind names the JSON type of a raw value for error messages.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func wrongType(path, want string, raw json.RawMessage) *FieldError {
	return &FieldError{Path: path, Problem: "expected " + want + ", got " + jsonKind(raw)}
}

// badValue reports a value of the right JSON type that is not acceptable,
// quoting (a prefix of) the value.
func badValue(path, want, got string) *FieldError {
	const max = 60
	if len(got) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(got[cut]) {
			cut--
		}
		got = got[:cut] + "..."
	}
	return &FieldError{Path: path, Problem: "expected " + want + ", got " + strconv.Quote(got)}
}

func syntaxProblem(path string, err error) *FieldError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &FieldError{Path: path, Problem: "invalid JSON: " + se.Error()}
	}
	return &FieldError{Path: path, Problem: err.Error()}
}

// decodeString decodes a raw JSON string, with a fast path for strings
// without escapes.
func decodeString(raw json.RawMessage, path string) (string, *FieldError) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", wrongType(path, "string", raw)
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", syntaxProblem(path, err)
	}
	return s, nil
}

// decodeArray splits a raw JSON array into its elements.
func decodeArray(raw json.RawMessage, path string) ([]json.RawMessage, *FieldError) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, wrongType(path, "array", raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, syntaxProblem(path, err)
	}
	return elems, nil
}

// object decodes the fields of one JSON object. Each accessor records the
// first problem in err and does nothing once there is one, so a decode
// method is a flat list of accessor calls followed by "return o.err".
type object struct {
	path   string
	fields map[string]json.RawMessage
	err    *FieldError
}

func decodeObject(raw json.RawMessage, path string) (*object, *FieldError) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, wrongType(path, "object", raw)
	}
	o := &object{path: path}
	if err := json.Unmarshal(raw, &o.fields); err != nil {
		return nil, syntaxProblem(path, err)
	}
	return o, nil
}

// field returns the raw value of name and its path; present is false when
// the field is absent, or null and optional. A missing required field is
// recorded as the object's error.
func (o *object) field(name string, required bool) (raw json.RawMessage, path string, present bool) {
	if o.err != nil {
		return nil, "", false
	}
	path = joinPath(o.path, name)
	raw, ok := o.fields[name]
	raw = bytes.TrimSpace(raw)
	if !ok || (!required && string(raw) == "null") {
		if required {
			o.err = &FieldError{Path: path, Problem: "missing required field"}
		}
		return nil, path, false
	}
	return raw, path, true
}

func (o *object) fail(fe *FieldError) bool {
	if fe != nil && o.err == nil {
		o.err = fe
	}
	return fe == nil
}

// str decodes a string field.
func (o *object) str(name string, dst *string, required bool) bool {
	raw, path, ok := o.field(name, required)
	if !ok {
		return false
	}
	s, fe := decodeString(raw, path)
	if !o.fail(fe) {
		return false
	}
	*dst = s
	return true
}

// nonEmpty decodes a string field that must not be "".
func (o *object) nonEmpty(name string, dst *string, required bool) bool {
	var s string
	if !o.str(name, &s, required) {
		return false
	}
	if s == "" {
		o.fail(badValue(joinPath(o.path, name), "a non-empty string", s))
		return false
	}
	*dst = s
	return true
}

// uuid decodes a UUID string field.
func (o *object) uuid(name string, dst *string, required bool) bool {
	var s string
	if !o.str(name, &s, required) {
		return false
	}
	if !IsUUID(s) {
		o.fail(badValue(joinPath(o.path, name), "a UUID", s))
		return false
	}
	*dst = s
	return true
}

// expressionID decodes an ExpressionId field (module:qualname/label).
func (o *object) expressionID(name string, dst *ExpressionID, required bool) bool {
	var s string
	if !o.str(name, &s, required) {
		return false
	}
	if _, _, err := ExpressionID(s).Split(); err != nil {
		o.fail(badValue(joinPath(o.path, name), "an expression id module:qualname/label", s))
		return false
	}
	*dst = ExpressionID(s)
	return true
}

// boolean decodes a true/false field.
func (o *object) boolean(name string, dst *bool, required bool) bool {
	raw, path, ok := o.field(name, required)
	if !ok {
		return false
	}
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		o.fail(wrongType(path, "boolean", raw))
		return false
	}
	return true
}

// integer decodes an integer field (no fraction, no exponent) that is at
// least min.
func (o *object) integer(name string, dst *int64, min int64, required bool) bool {
	raw, path, ok := o.field(name, required)
	if !ok {
		return false
	}
	if jsonKind(raw) != "number" {
		o.fail(wrongType(path, "integer", raw))
		return false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		o.fail(badValue(path, "an integer", string(raw)))
		return false
	}
	if n < min {
		o.fail(badValue(path, "an integer >= "+strconv.FormatInt(min, 10), string(raw)))
		return false
	}
	*dst = n
	return true
}

// natural decodes a non-negative int field.
func (o *object) natural(name string, dst *int, required bool) bool {
	var n int64
	if !o.integer(name, &n, 0, required) {
		return false
	}
	if int64(int(n)) != n {
		o.fail(badValue(joinPath(o.path, name), "a smaller integer", strconv.FormatInt(n, 10)))
		return false
	}
	*dst = int(n)
	return true
}

// strings decodes an array of strings.
func (o *object) strings(name string, dst *[]string, required bool) bool {
	raw, path, ok := o.field(name, required)
	if !ok {
		return false
	}
	elems, fe := decodeArray(raw, path)
	if !o.fail(fe) {
		return false
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		s, fe := decodeString(e, indexPath(path, i))
		if !o.fail(fe) {
			return false
		}
		out[i] = s
	}
	*dst = out
	return true
}

// expressionIDs decodes an array of expression ids.
func decodeExpressionIDs(raw json.RawMessage, path string) ([]ExpressionID, *FieldError) {
	elems, fe := decodeArray(raw, path)
	if fe != nil {
		return nil, fe
	}
	out := make([]ExpressionID, len(elems))
	for i, e := range elems {
		p := indexPath(path, i)
		s, fe := decodeString(e, p)
		if fe != nil {
			return nil, fe
		}
		if _, _, err := ExpressionID(s).Split(); err != nil {
			return nil, badValue(p, "an expression id module:qualname/label", s)
		}
		out[i] = ExpressionID(s)
	}
	return out, nil
}

// nested decodes an object-valued (or union-valued) field with decode.
func (o *object) nested(name string, required bool, decode func(json.RawMessage, string) *FieldError) bool {
	raw, path, ok := o.field(name, required)
	if !ok {
		return false
	}
	return o.fail(decode(raw, path))
}

// array decodes an array field element by element with decode.
func (o *object) array(name string, required bool, decode func(i int, raw json.RawMessage, path string) *FieldError) bool {
	raw, path, ok := o.field(name, required)
	if !ok {
		return false
	}
	elems, fe := decodeArray(raw, path)
	if !o.fail(fe) {
		return false
	}
	for i, e := range elems {
		if !o.fail(decode(i, e, indexPath(path, i))) {
			return false
		}
	}
	return true
}

// any keeps a field's raw JSON, whatever its type.
func (o *object) any(name string, dst *json.RawMessage, required bool) bool {
	raw, _, ok := o.field(name, required)
	if !ok {
		return false
	}
	*dst = append(json.RawMessage(nil), raw...)
	return true
}
