package protocol

import (
	"bytes"
	"encoding/json"
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
	// Validate once here; the field decoders below walk the bytes without
	// checking their syntax again.
	if !json.Valid(raw) {
		return InvalidParams("", "invalid JSON: "+parseProblem(raw))
	}
	if fe := p.decode(raw, ""); fe != nil {
		return InvalidParams(fe.Path, fe.Problem)
	}
	return nil
}

// unmarshalWith adapts a decode method to json.Unmarshaler; it keeps a nil
// *FieldError from becoming a non-nil error.
func unmarshalWith(raw []byte, decode func(json.RawMessage, string) *FieldError) error {
	if !json.Valid(raw) {
		return &FieldError{Problem: "invalid JSON: " + parseProblem(raw)}
	}
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

// stringValue decodes a raw JSON string (valid JSON), with a fast path for
// strings without escapes; ok is false when raw is not a string.
func stringValue(raw json.RawMessage) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	return unquoteSlow(raw)
}

// unquoteSlow decodes a string with escapes or invalid UTF-8 (replaced by
// U+FFFD, as encoding/json does).
func unquoteSlow(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// decodeString decodes a raw JSON string or reports a wrong type at path.
func decodeString(raw json.RawMessage, path string) (string, *FieldError) {
	s, ok := stringValue(raw)
	if !ok {
		return "", wrongType(path, "string", raw)
	}
	return s, nil
}

// forEachElement calls fn with each element of a raw JSON array (valid
// JSON) until fn returns false; ok is false when raw is not an array.
func forEachElement(raw json.RawMessage, fn func(i int, elem json.RawMessage) bool) (ok bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return false
	}
	i := skipSpace(raw, 1) // past '['
	for n := 0; i < len(raw) && raw[i] != ']'; n++ {
		end := skipValue(raw, i)
		if !fn(n, raw[i:end]) {
			return true
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return true
}

// countElements returns the length of a raw JSON array (valid JSON).
func countElements(raw json.RawMessage) int {
	n := 0
	forEachElement(raw, func(int, json.RawMessage) bool { n++; return true })
	return n
}

// member is one key and value of a JSON object; both alias the input
// unless the key had escapes.
type member struct {
	key   []byte
	value json.RawMessage
}

// object decodes the fields of one JSON object. Each accessor records the
// first problem in err and does nothing once there is one, so a decode
// method is a flat list of accessor calls followed by "return o.err".
//
// Decoding params is on the path of every keystroke, so this is built not
// to allocate needlessly: the input is valid JSON (DecodeParams and
// unmarshalWith check that once) and is walked in place instead of being
// unmarshalled into a map; the members of small objects live in the object
// itself (which stays on the caller's stack); a field's path is only
// spelled out when there is an error or a nested value to descend into.
type object struct {
	path   string
	n      int       // number of members
	inline [6]member // the first members
	extra  []member  // members past len(inline)
	err    *FieldError
}

// init sets o up to decode raw, which must be a JSON object.
func (o *object) init(raw json.RawMessage, path string) *FieldError {
	if len(raw) == 0 || raw[0] != '{' {
		return wrongType(path, "object", raw)
	}
	o.path = path
	for i := 1; ; {
		key, value, next, ok := nextMember(raw, i)
		if !ok {
			break
		}
		if o.n < len(o.inline) {
			o.inline[o.n] = member{key, value}
		} else {
			o.extra = append(o.extra, member{key, value})
		}
		o.n++
		i = next
	}
	return nil
}

// lookup returns the value of the last member named name (JSON leaves
// duplicates undefined; the last one wins, as in encoding/json).
func (o *object) lookup(name string) (json.RawMessage, bool) {
	for i := len(o.extra) - 1; i >= 0; i-- {
		if string(o.extra[i].key) == name {
			return o.extra[i].value, true
		}
	}
	for i := min(o.n, len(o.inline)) - 1; i >= 0; i-- {
		if string(o.inline[i].key) == name {
			return o.inline[i].value, true
		}
	}
	return nil, false
}

// at spells out the path of field name.
func (o *object) at(name string) string { return joinPath(o.path, name) }

// field returns the raw value of name; present is false when the field is
// absent, or null and optional. A missing required field is recorded as the
// object's error.
func (o *object) field(name string, required bool) (raw json.RawMessage, present bool) {
	if o.err != nil {
		return nil, false
	}
	raw, ok := o.lookup(name)
	if !ok || (!required && string(raw) == "null") {
		if required {
			o.err = &FieldError{Path: o.at(name), Problem: "missing required field"}
		}
		return nil, false
	}
	return raw, true
}

func (o *object) fail(fe *FieldError) bool {
	if fe != nil && o.err == nil {
		o.err = fe
	}
	return fe == nil
}

// str decodes a string field.
func (o *object) str(name string, dst *string, required bool) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	s, ok := stringValue(raw)
	if !ok {
		o.fail(wrongType(o.at(name), "string", raw))
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
		o.fail(badValue(o.at(name), "a non-empty string", s))
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
		o.fail(badValue(o.at(name), "a UUID", s))
		return false
	}
	*dst = s
	return true
}

const wantExpressionID = "an expression id module:qualname/label"

// expressionID decodes an ExpressionId field (module:qualname/label).
func (o *object) expressionID(name string, dst *ExpressionID, required bool) bool {
	var s string
	if !o.str(name, &s, required) {
		return false
	}
	if !ExpressionID(s).wellFormed() {
		o.fail(badValue(o.at(name), wantExpressionID, s))
		return false
	}
	*dst = ExpressionID(s)
	return true
}

// boolean decodes a true/false field.
func (o *object) boolean(name string, dst *bool, required bool) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		o.fail(wrongType(o.at(name), "boolean", raw))
		return false
	}
	return true
}

// integer decodes an integer field (no fraction, no exponent) that is at
// least min.
func (o *object) integer(name string, dst *int64, min int64, required bool) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	if jsonKind(raw) != "number" {
		o.fail(wrongType(o.at(name), "integer", raw))
		return false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		o.fail(badValue(o.at(name), "an integer", string(raw)))
		return false
	}
	if n < min {
		o.fail(badValue(o.at(name), "an integer >= "+strconv.FormatInt(min, 10), string(raw)))
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
		o.fail(badValue(o.at(name), "a smaller integer", strconv.FormatInt(n, 10)))
		return false
	}
	*dst = int(n)
	return true
}

// strings decodes an array of strings.
func (o *object) strings(name string, dst *[]string, required bool) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	out := make([]string, 0, countElements(raw))
	isArray := forEachElement(raw, func(i int, elem json.RawMessage) bool {
		s, ok := stringValue(elem)
		if !ok {
			o.fail(wrongType(indexPath(o.at(name), i), "string", elem))
			return false
		}
		out = append(out, s)
		return true
	})
	if !isArray {
		o.fail(wrongType(o.at(name), "array", raw))
	}
	if o.err != nil {
		return false
	}
	*dst = out
	return true
}

// decodeExpressionIDs decodes an array of expression ids.
func decodeExpressionIDs(raw json.RawMessage, path string) ([]ExpressionID, *FieldError) {
	var fe *FieldError
	out := make([]ExpressionID, 0, countElements(raw))
	isArray := forEachElement(raw, func(i int, elem json.RawMessage) bool {
		s, ok := stringValue(elem)
		switch {
		case !ok:
			fe = wrongType(indexPath(path, i), "string", elem)
		case !ExpressionID(s).wellFormed():
			fe = badValue(indexPath(path, i), wantExpressionID, s)
		default:
			out = append(out, ExpressionID(s))
			return true
		}
		return false
	})
	if !isArray {
		return nil, wrongType(path, "array", raw)
	}
	if fe != nil {
		return nil, fe
	}
	return out, nil
}

// nested decodes an object-valued (or union-valued) field with decode.
func (o *object) nested(name string, required bool, decode func(json.RawMessage, string) *FieldError) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	return o.fail(decode(raw, o.at(name)))
}

// array decodes an array field element by element with decode.
func (o *object) array(name string, required bool, decode func(i int, raw json.RawMessage, path string) *FieldError) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	path := o.at(name)
	isArray := forEachElement(raw, func(i int, elem json.RawMessage) bool {
		return o.fail(decode(i, elem, indexPath(path, i)))
	})
	if !isArray {
		o.fail(wrongType(path, "array", raw))
	}
	return o.err == nil
}

// any keeps a field's raw JSON, whatever its type.
func (o *object) any(name string, dst *json.RawMessage, required bool) bool {
	raw, ok := o.field(name, required)
	if !ok {
		return false
	}
	*dst = append(json.RawMessage(nil), raw...)
	return true
}
