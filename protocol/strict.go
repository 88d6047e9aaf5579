package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// This file is the strict decoder behind every params type. encoding/json
// alone cannot say which required field is missing, and its type errors name
// Go types; clients need "params.stackItem.type: missing required field". So
// params are decoded by one decoder that follows each type's definition
// (its plan, strictplan.go: required and optional fields, checks, unions)
// and reports the first problem together with the field's full path.
// Unknown fields are ignored; null counts as absent for optional fields and
// as a wrong type for required ones.

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
// Methods and NewParams): a pointer to a struct that decodes strictly,
// through DecodeParams or encoding/json alike.
type Params interface {
	json.Unmarshaler
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
	// Validate once here; the decoder below walks the bytes without
	// checking their syntax again.
	if !json.Valid(raw) {
		return InvalidParams("", "invalid JSON: "+parseProblem(raw))
	}
	if fe := decodeStrict(raw, p); fe != nil {
		return InvalidParams(fe.Path, fe.Problem)
	}
	return nil
}

// unmarshalStrict is the UnmarshalJSON of every strict type; it keeps a
// nil *FieldError from becoming a non-nil error.
func unmarshalStrict(raw []byte, ptr any) error {
	if !json.Valid(raw) {
		return &FieldError{Problem: "invalid JSON: " + parseProblem(raw)}
	}
	if fe := decodeStrict(bytes.TrimSpace(raw), ptr); fe != nil {
		return fe
	}
	return nil
}

// decodeStrict decodes valid JSON into what ptr points to, following its
// type's plan.
func decodeStrict(raw json.RawMessage, ptr any) *FieldError {
	v := reflect.ValueOf(ptr).Elem()
	var buf [64]byte
	d := decoder{path: buf[:0]}
	return d.value(planFor(v.Type()), v, raw)
}

// decoder walks one value. Decoding params is on the path of every
// keystroke, so it is built not to allocate needlessly: the input is valid
// JSON (DecodeParams and unmarshalStrict check that once) and is walked in
// place instead of being unmarshalled into a map; the members of small
// objects live on the stack (object); the path of the value being decoded
// is kept in one buffer and only spelled out as a string in an error.
type decoder struct {
	path []byte // the path of the current value, as FieldError.Path
}

// enter appends a member name to the path and returns what leave takes to
// come back.
func (d *decoder) enter(name string) int {
	n := len(d.path)
	if n > 0 {
		d.path = append(d.path, '.')
	}
	d.path = append(d.path, name...)
	return n
}

// enterIndex appends an array index to the path.
func (d *decoder) enterIndex(i int) int {
	n := len(d.path)
	d.path = append(d.path, '[')
	d.path = strconv.AppendInt(d.path, int64(i), 10)
	d.path = append(d.path, ']')
	return n
}

func (d *decoder) leave(n int) { d.path = d.path[:n] }

func (d *decoder) fail(problem string) *FieldError {
	return &FieldError{Path: string(d.path), Problem: problem}
}

func (d *decoder) wrongType(want string, raw json.RawMessage) *FieldError {
	return d.fail("expected " + want + ", got " + jsonKind(raw))
}

// badValue reports a value of the right JSON type that is not acceptable,
// quoting (a prefix of) the value.
func (d *decoder) badValue(want, got string) *FieldError {
	return d.fail(badValueProblem(want, got))
}

// value decodes raw into v, which is settable.
func (d *decoder) value(p *valuePlan, v reflect.Value, raw json.RawMessage) *FieldError {
	switch p.kind {
	case kindString:
		return d.str(p, v, raw)
	case kindBool:
		switch string(raw) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			return d.wrongType("boolean", raw)
		}
	case kindInt:
		return d.integer(p, v, raw)
	case kindStruct:
		return d.object(p.st, v, raw)
	case kindSlice:
		return d.array(p, v, raw)
	case kindPointer:
		elem := reflect.New(v.Type().Elem())
		v.Set(elem)
		return d.value(p.elem, elem.Elem(), raw)
	case kindCustom:
		if fe := v.Addr().Interface().(customDecoder).decodeStrict(raw); fe != nil {
			fe.Path = string(d.path) + relativePath(len(d.path) > 0, fe.Path)
			return fe
		}
	}
	return nil
}

// relativePath is the separator and rest of a path below a value.
func relativePath(under bool, rel string) string {
	if !under || rel == "" || rel[0] == '[' {
		return rel
	}
	return "." + rel
}

// str decodes a string and checks it.
func (d *decoder) str(p *valuePlan, v reflect.Value, raw json.RawMessage) *FieldError {
	s, ok := stringValue(raw)
	if !ok {
		return d.wrongType("string", raw)
	}
	if p.nonEmpty && s == "" {
		return d.badValue("a non-empty string", s)
	}
	if p.check != nil && !p.check.ok(s) {
		return d.badValue(p.check.want, s)
	}
	v.SetString(s)
	return nil
}

// integer decodes an integer (no fraction, no exponent), at least p.min
// when it has one, that fits v.
func (d *decoder) integer(p *valuePlan, v reflect.Value, raw json.RawMessage) *FieldError {
	if jsonKind(raw) != "number" {
		return d.wrongType("integer", raw)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return d.badValue("an integer", string(raw))
	}
	if p.hasMin && n < p.min {
		return d.badValue("an integer >= "+strconv.FormatInt(p.min, 10), string(raw))
	}
	if v.OverflowInt(n) {
		return d.badValue("a smaller integer", strconv.FormatInt(n, 10))
	}
	v.SetInt(n)
	return nil
}

// array decodes a JSON array into a slice (never nil, even when empty).
func (d *decoder) array(p *valuePlan, v reflect.Value, raw json.RawMessage) *FieldError {
	if len(raw) == 0 || raw[0] != '[' {
		return d.wrongType("array", raw)
	}
	n := countElements(raw)
	s := reflect.MakeSlice(v.Type(), n, n)
	var fe *FieldError
	forEachElement(raw, func(i int, elem json.RawMessage) bool {
		at := d.enterIndex(i)
		fe = d.value(p.elem, s.Index(i), elem)
		d.leave(at)
		return fe == nil
	})
	if fe != nil {
		return fe
	}
	v.Set(s)
	return nil
}

// object decodes a JSON object into a struct, which it resets first: the
// fields of a plain struct, or of a union the tag and its variant's fields,
// in the order of the struct's definition (the first problem is the one
// reported).
func (d *decoder) object(sp *structPlan, v reflect.Value, raw json.RawMessage) *FieldError {
	var o object
	if !o.init(raw) {
		return d.wrongType("object", raw)
	}
	v.SetZero()
	fields := sp.all
	if sp.tag != nil {
		variant, fe := d.tag(sp, &o, v)
		if fe != nil {
			return fe
		}
		fields = variant.fields
	}
	for _, use := range fields {
		f := use.f
		raw, ok := o.lookup(f.name)
		if ok && use.optional && string(raw) == "null" {
			ok = false
		}
		at := d.enter(f.name)
		switch {
		case ok:
			if fe := d.value(&f.value, v.Field(f.index), raw); fe != nil {
				return fe
			}
		case !use.optional:
			return d.fail("missing required field")
		case f.defaultTrue:
			v.Field(f.index).SetBool(true)
		}
		d.leave(at)
	}
	return nil
}

// tag decodes the type tag of a union and returns its variant.
func (d *decoder) tag(sp *structPlan, o *object, v reflect.Value) (*variantPlan, *FieldError) {
	at := d.enter(sp.tag.name)
	raw, ok := o.lookup(sp.tag.name)
	if !ok {
		return nil, d.fail("missing required field")
	}
	s, ok := stringValue(raw)
	if !ok {
		return nil, d.wrongType("string", raw)
	}
	i := sp.variant(s)
	if i < 0 {
		return nil, d.badValue(sp.wantTag, s)
	}
	v.Field(sp.tag.index).SetString(s)
	d.leave(at)
	return &sp.variants[i], nil
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

// badValueProblem says that got is not want, quoting (a prefix of) got.
func badValueProblem(want, got string) string {
	const max = 60
	if len(got) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(got[cut]) {
			cut--
		}
		got = got[:cut] + "..."
	}
	return "expected " + want + ", got " + strconv.Quote(got)
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

// object holds the members of one JSON object (valid JSON) for lookup by
// name. The members of small objects live in the object itself, which
// stays on the caller's stack.
type object struct {
	n      int       // number of members
	inline [6]member // the first members
	extra  []member  // members past len(inline)
}

// init reads raw's members; false when raw is not a JSON object.
func (o *object) init(raw json.RawMessage) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
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
	return true
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
