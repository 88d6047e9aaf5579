package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// This file turns a Go type into the plan the strict decoder (strict.go)
// follows. The plan comes from the type's definition alone, so a struct
// field cannot be left out of its decoder: every exported field is a
// member of the JSON object, named by its json tag, and building the plan
// panics on a field it cannot decode. What the json tag cannot say is in a
// decode tag, a comma-separated list of:
//
//	optional        the member may be absent or null (the field keeps its
//	                zero value); without it the member is required
//	default=true    for an optional bool: the value when absent or null
//	nonempty        for a string: "" is refused
//	min=N           for an integer: values below N are refused
//	tag=A|B|C       the field is the type tag of a union: a required string,
//	                one of A, B, C (in the order error messages list them);
//	                the other fields say which variants they belong to
//	variants=A|B?   for a field of a union: the variants it belongs to,
//	                required in A and optional in B (the ? suffix)
//
// A field whose json tag has omitempty must be optional, so that what the
// encoder leaves out decodes again (unions, which encode themselves, are
// exempt). Named string types carry their own check (stringChecks):
// ContextID and VisualizationID are UUIDs, ExpressionID is
// module:qualname/label, RunEffects "hold" or "allow", wherever they
// appear. A type whose pointer has a
// decodeStrict method (InvalidatedExpressions, "all" or an array) decodes
// itself.
//
// Plans are built once per type, on first use, and cached; they are
// immutable after.

// valueKind says how a value is decoded.
type valueKind uint8

const (
	kindString valueKind = iota
	kindBool
	kindInt
	kindStruct
	kindSlice
	kindPointer
	kindCustom // the type's decodeStrict method
)

// valuePlan is how to decode one value: a field, an array element or a
// pointee.
type valuePlan struct {
	kind valueKind

	// Strings.
	check    *stringCheck // the check of a named string type; nil for none
	nonEmpty bool

	// Integers.
	hasMin bool
	min    int64

	elem *valuePlan  // the element of a slice, the pointee of a pointer
	st   *structPlan // kindStruct
}

// structPlan is how to decode a struct from a JSON object.
type structPlan struct {
	fields []fieldPlan
	// all lists every field of a plain struct; empty for a union.
	all []fieldUse
	// tag is the type tag of a union (nil for a plain struct); variants
	// lists the fields of each of its variants, in the tag's order, and
	// wantTag says what the tag may be in error messages.
	tag      *fieldPlan
	variants []variantPlan
	wantTag  string
}

// fieldPlan is one field of a struct: its member name and how to decode
// it.
type fieldPlan struct {
	name        string
	index       int
	optional    bool
	defaultTrue bool
	value       valuePlan
	variants    map[string]bool // unions: variant -> optional in it
}

// fieldUse is a field as one variant (or a plain struct) decodes it.
type fieldUse struct {
	f        *fieldPlan
	optional bool
}

type variantPlan struct {
	name   string
	fields []fieldUse
}

// stringCheck is the rule of a named string type: ok says whether a value
// is acceptable, want how an error message describes one.
type stringCheck struct {
	want string
	ok   func(string) bool
}

const wantExpressionID = "an expression id module:qualname/label"

// stringChecks are the named string types that are checked wherever they
// appear.
var stringChecks = map[reflect.Type]*stringCheck{
	reflect.TypeFor[ContextID]():       {want: "a UUID", ok: IsUUID},
	reflect.TypeFor[VisualizationID](): {want: "a UUID", ok: IsUUID},
	reflect.TypeFor[ExpressionID]():    {want: wantExpressionID, ok: func(s string) bool { return ExpressionID(s).wellFormed() }},
	reflect.TypeFor[RunEffects]():      {want: `"hold" or "allow"`, ok: func(s string) bool { return s == string(EffectsHold) || s == string(EffectsAllow) }},
}

// customDecoder is implemented by the pointer of a type that decodes
// itself. Problems are reported relative to the value (Path "" is the
// value, "[2]" its third element).
type customDecoder interface {
	decodeStrict(raw json.RawMessage) *FieldError
}

var customDecoderType = reflect.TypeFor[customDecoder]()

// plans caches one *valuePlan per reflect.Type.
var plans sync.Map

// planFor returns the plan of t, building it on first use.
func planFor(t reflect.Type) *valuePlan {
	if p, ok := plans.Load(t); ok {
		return p.(*valuePlan)
	}
	p := buildValue(t, nil, map[reflect.Type]bool{})
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*valuePlan)
}

// planError is what building a plan panics with: a programming error in a
// type definition, found by the first test that decodes the type.
func planError(t reflect.Type, format string, args ...any) string {
	return "protocol: strict decoding of " + t.String() + ": " + fmt.Sprintf(format, args...)
}

// fieldOptions are the decode tag of one field.
type fieldOptions struct {
	optional, defaultTrue, nonEmpty bool
	hasMin                          bool
	min                             int64
	tag                             []string
	variants                        map[string]bool
}

// buildValue builds the plan of a value of type t; opts are its field's
// options (nil for elements and pointees). building holds the struct types
// being built, to refuse recursive types.
func buildValue(t reflect.Type, opts *fieldOptions, building map[reflect.Type]bool) *valuePlan {
	if opts == nil {
		opts = &fieldOptions{}
	}
	if reflect.PointerTo(t).Implements(customDecoderType) {
		return &valuePlan{kind: kindCustom}
	}
	p := &valuePlan{}
	switch t.Kind() {
	case reflect.String:
		p.kind, p.check, p.nonEmpty = kindString, stringChecks[t], opts.nonEmpty
	case reflect.Bool:
		p.kind = kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind, p.hasMin, p.min = kindInt, opts.hasMin, opts.min
	case reflect.Struct:
		p.kind, p.st = kindStruct, buildStruct(t, building)
	case reflect.Slice:
		p.kind, p.elem = kindSlice, buildValue(t.Elem(), nil, building)
	case reflect.Pointer:
		p.kind, p.elem = kindPointer, buildValue(t.Elem(), nil, building)
	default:
		panic(planError(t, "cannot decode a %s", t.Kind()))
	}
	if opts.nonEmpty && p.kind != kindString {
		panic(planError(t, "nonempty on a %s", t.Kind()))
	}
	if opts.hasMin && p.kind != kindInt {
		panic(planError(t, "min on a %s", t.Kind()))
	}
	return p
}

// buildStruct builds the plan of struct type t.
func buildStruct(t reflect.Type, building map[reflect.Type]bool) *structPlan {
	if building[t] {
		panic(planError(t, "recursive types are not supported"))
	}
	building[t] = true
	defer delete(building, t)

	sp := &structPlan{fields: make([]fieldPlan, t.NumField())}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, omitEmpty := jsonName(t, sf)
		opts := parseOptions(t, sf)
		f := &sp.fields[i]
		*f = fieldPlan{name: name, index: i, optional: opts.optional, defaultTrue: opts.defaultTrue, variants: opts.variants}
		f.value = *buildValue(sf.Type, opts, building)
		if opts.defaultTrue && (f.value.kind != kindBool || !opts.optional) {
			panic(planError(t, "field %s: default=true needs an optional bool", sf.Name))
		}
		if opts.tag != nil {
			if sp.tag != nil || f.value.kind != kindString || opts.optional {
				panic(planError(t, "field %s: a union has one tag, a required string", sf.Name))
			}
			sp.tag = f
			for _, v := range opts.tag {
				sp.variants = append(sp.variants, variantPlan{name: v})
			}
			sp.wantTag = quotedList(opts.tag)
		} else if omitEmpty && !opts.optional && opts.variants == nil {
			panic(planError(t, "field %s: omitempty but required, so what is encoded would not decode", sf.Name))
		}
	}
	if sp.tag == nil {
		for i := range sp.fields {
			f := &sp.fields[i]
			if f.variants != nil {
				panic(planError(t, "field %s: variants outside a union", t.Field(i).Name))
			}
			sp.all = append(sp.all, fieldUse{f, f.optional})
		}
		return sp
	}
	sp.assignVariants(t)
	return sp
}

// assignVariants lists the fields of each variant of union t.
func (sp *structPlan) assignVariants(t reflect.Type) {
	for i := range sp.fields {
		f := &sp.fields[i]
		if f == sp.tag {
			continue
		}
		if f.variants == nil || f.optional {
			panic(planError(t, "field %s: a field of a union says its variants (and optional per variant)", t.Field(i).Name))
		}
		for name, optional := range f.variants {
			j := sp.variant(name)
			if j < 0 {
				panic(planError(t, "field %s: variant %q is not in the tag", t.Field(i).Name, name))
			}
			sp.variants[j].fields = append(sp.variants[j].fields, fieldUse{f, optional})
		}
	}
}

// variant returns the index of the variant named name, or -1.
func (sp *structPlan) variant(name string) int {
	for i := range sp.variants {
		if sp.variants[i].name == name {
			return i
		}
	}
	return -1
}

// jsonName returns the member name of a field and whether it is
// omitempty; every field must have one.
func jsonName(t reflect.Type, sf reflect.StructField) (name string, omitEmpty bool) {
	tag, ok := sf.Tag.Lookup("json")
	name, rest, _ := strings.Cut(tag, ",")
	if !ok || name == "" || name == "-" || !sf.IsExported() || sf.Anonymous {
		panic(planError(t, "field %s: every field is a JSON member named by its json tag", sf.Name))
	}
	for opt := range strings.SplitSeq(rest, ",") {
		if opt == "omitempty" {
			omitEmpty = true
		}
	}
	return name, omitEmpty
}

// parseOptions reads the decode tag of a field.
func parseOptions(t reflect.Type, sf reflect.StructField) *fieldOptions {
	opts := &fieldOptions{}
	tag := sf.Tag.Get("decode")
	if tag == "" {
		return opts
	}
	for opt := range strings.SplitSeq(tag, ",") {
		key, value, _ := strings.Cut(opt, "=")
		switch {
		case opt == "optional":
			opts.optional = true
		case opt == "nonempty":
			opts.nonEmpty = true
		case opt == "default=true":
			opts.defaultTrue = true
		case key == "min":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				panic(planError(t, "field %s: bad %q", sf.Name, opt))
			}
			opts.hasMin, opts.min = true, n
		case key == "tag" && value != "":
			opts.tag = strings.Split(value, "|")
		case key == "variants" && value != "":
			opts.variants = map[string]bool{}
			for v := range strings.SplitSeq(value, "|") {
				name, optional := strings.CutSuffix(v, "?")
				opts.variants[name] = optional
			}
		default:
			panic(planError(t, "field %s: unknown decode option %q", sf.Name, opt))
		}
	}
	return opts
}

// quotedList writes names as `"A", "B" or "C"`.
func quotedList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}
