package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestStrictPlansBuild builds the plan of every type that decodes strictly:
// a mistake in their tags panics here before any decode meets it.
func TestStrictPlansBuild(t *testing.T) {
	t.Parallel()
	types := []reflect.Type{
		reflect.TypeFor[ExpressionUpdate](), reflect.TypeFor[Payload](), reflect.TypeFor[StackItem](),
		reflect.TypeFor[Position](), reflect.TypeFor[Range](), reflect.TypeFor[MethodPointer](),
		reflect.TypeFor[TextEdit](), reflect.TypeFor[FileEdit](), reflect.TypeFor[VisualizationConfiguration](),
		reflect.TypeFor[InvalidatedExpressions](),
	}
	for _, m := range Methods() {
		types = append(types, m.Params)
	}
	for _, typ := range types {
		if p := planFor(typ); p == nil {
			t.Errorf("no plan for %v", typ)
		}
	}
}

// Types whose definitions the plan builder refuses.
type (
	noJSONTag struct {
		A string
	}
	dashTag struct {
		A string `json:"-"`
	}
	embedded struct {
		Position `json:"position"`
	}
	omitEmptyRequired struct {
		A string `json:"a,omitempty"`
	}
	unknownOption struct {
		A string `json:"a" decode:"required"`
	}
	nonEmptyInt struct {
		A int `json:"a" decode:"nonempty"`
	}
	minString struct {
		A string `json:"a" decode:"min=1"`
	}
	badMin struct {
		A int `json:"a" decode:"min=one"`
	}
	defaultRequired struct {
		A bool `json:"a" decode:"default=true"`
	}
	defaultString struct {
		A string `json:"a" decode:"optional,default=true"`
	}
	twoTags struct {
		A string `json:"a" decode:"tag=X|Y"`
		B string `json:"b" decode:"tag=X|Y"`
	}
	optionalTag struct {
		A string `json:"a" decode:"optional,tag=X|Y"`
	}
	noVariants struct {
		A string `json:"a" decode:"tag=X|Y"`
		B string `json:"b"`
	}
	unknownVariant struct {
		A string `json:"a" decode:"tag=X|Y"`
		B string `json:"b" decode:"variants=Z"`
	}
	variantsOutsideUnion struct {
		B string `json:"b" decode:"variants=X"`
	}
	mapField struct {
		A map[string]string `json:"a"`
	}
	floatField struct {
		A float64 `json:"a"`
	}
	recursive struct {
		Next *recursive `json:"next" decode:"optional"`
	}
)

func TestStrictPlanRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[noJSONTag](), "field A: every field is a JSON member named by its json tag"},
		{reflect.TypeFor[dashTag](), "field A: every field is a JSON member"},
		{reflect.TypeFor[embedded](), "field Position: every field is a JSON member"},
		{reflect.TypeFor[omitEmptyRequired](), "field A: omitempty but required"},
		{reflect.TypeFor[unknownOption](), `field A: unknown decode option "required"`},
		{reflect.TypeFor[nonEmptyInt](), "nonempty on a int"},
		{reflect.TypeFor[minString](), "min on a string"},
		{reflect.TypeFor[badMin](), `field A: bad "min=one"`},
		{reflect.TypeFor[defaultRequired](), "field A: default=true needs an optional bool"},
		{reflect.TypeFor[defaultString](), "field A: default=true needs an optional bool"},
		{reflect.TypeFor[twoTags](), "field B: a union has one tag"},
		{reflect.TypeFor[optionalTag](), "field A: a union has one tag"},
		{reflect.TypeFor[noVariants](), "field B: a field of a union says its variants"},
		{reflect.TypeFor[unknownVariant](), `field B: variant "Z" is not in the tag`},
		{reflect.TypeFor[variantsOutsideUnion](), "field B: variants outside a union"},
		{reflect.TypeFor[mapField](), "cannot decode a map"},
		{reflect.TypeFor[floatField](), "cannot decode a float64"},
		{reflect.TypeFor[recursive](), "recursive types are not supported"},
	}
	for _, tt := range tests {
		got := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			buildValue(tt.typ, nil, map[reflect.Type]bool{})
			return ""
		}()
		if !strings.HasPrefix(got, "protocol: strict decoding of ") || !strings.Contains(got, tt.want) {
			t.Errorf("%v: panic %q, want one containing %q", tt.typ, got, tt.want)
		}
	}
}

// A union's fields: required or optional per variant, absent from the
// others (ignored there, like unknown members).
func TestStrictUnionVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json, wantErr string
		want          Payload
	}{
		{`{"type":"Pending"}`, "", Payload{Type: PayloadPending}},
		{`{"type":"Pending","message":null,"trace":7}`, "", Payload{Type: PayloadPending}},
		{`{"type":"Panic","trace":[]}`, "message: missing required field", Payload{}},
		{`{"type":"Panic","message":null,"trace":[]}`, "message: expected string, got null", Payload{}},
		{`{"type":"Panic","message":"E","trace":["m:f/x"],"preview":5}`, "", Payload{Type: PayloadPanic, Message: "E", Trace: []ExpressionID{"m:f/x"}}},
		{`{"type":"Value","mimeTypes":["text/html"]}`, "", Payload{Type: PayloadValue, MimeTypes: []string{"text/html"}}},
		{`{"type":"DataflowError"}`, "trace: missing required field", Payload{}},
		{`{"type":7}`, "type: expected string, got number", Payload{}},
		{`{"type":"value"}`, `type: expected "Value", "Panic", "DataflowError" or "Pending", got "value"`, Payload{}},
		// 8.2 and 8.4's fields: reason and startedAt of Pending, effects of Value.
		{`{"type":"Pending","message":"not reached","reason":{"kind":"exception","expressionId":"m:f/x"}}`, "",
			Payload{Type: PayloadPending, Message: "not reached", Reason: &PendingReason{Kind: "exception", ExpressionID: "m:f/x"}}},
		{`{"type":"Pending","message":"running","startedAt":"2026-11-29T01:02:03.456Z"}`, "",
			Payload{Type: PayloadPending, Message: "running", StartedAt: "2026-11-29T01:02:03.456Z"}},
		{`{"type":"Pending","reason":null}`, "", Payload{Type: PayloadPending}},
		{`{"type":"Pending","reason":{}}`, "reason.kind: missing required field", Payload{}},
		{`{"type":"Pending","reason":{"kind":"held","args":"x"}}`, "reason.args: expected array, got string", Payload{}},
		{`{"type":"Pending","reason":{"kind":"exception","expressionId":"x"}}`,
			`reason.expressionId: expected an expression id module:qualname/label, got "x"`, Payload{}},
		{`{"type":"Pending","startedAt":5}`, "startedAt: expected string, got number", Payload{}},
		{`{"type":"Value","effects":["open('a', 'w')"]}`, "", Payload{Type: PayloadValue, Effects: []string{"open('a', 'w')"}}},
		{`{"type":"Value","effects":[1]}`, "effects[0]: expected string, got number", Payload{}},
		{`{"type":"Value","reason":{"kind":"held"},"startedAt":"t"}`, "", Payload{Type: PayloadValue}},
	}
	for _, tt := range tests {
		var got Payload
		err := json.Unmarshal([]byte(tt.json), &got)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: error %v, want %q", tt.json, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %#v, %v; want %#v", tt.json, got, err, tt.want)
		}
	}
}

// Integers: no fraction or exponent, the minimum of the field, and a
// value that fits the Go type.
func TestStrictIntegers(t *testing.T) {
	t.Parallel()
	tests := []struct{ json, wantErr string }{
		{`{"type":"ExecutionTime","nanoTime":0}`, ""},
		{`{"type":"ExecutionTime","nanoTime":9223372036854775807}`, ""},
		{`{"type":"ExecutionTime","nanoTime":9223372036854775808}`, `nanoTime: expected an integer, got "9223372036854775808"`},
		{`{"type":"ExecutionTime","nanoTime":-1}`, `nanoTime: expected an integer >= 0, got "-1"`},
		{`{"type":"ExecutionTime","nanoTime":1e3}`, `nanoTime: expected an integer, got "1e3"`},
		{`{"type":"ExecutionTime","nanoTime":"1"}`, "nanoTime: expected integer, got string"},
	}
	for _, tt := range tests {
		var p ProfilingInfo
		fe := decodeStrict(json.RawMessage(tt.json), &p)
		got := ""
		if fe != nil {
			got = fe.Error()
		}
		if got != tt.wantErr {
			t.Errorf("%s: error %q, want %q", tt.json, got, tt.wantErr)
		}
	}
	type small struct {
		N int8 `json:"n"`
	}
	var s small
	if fe := decodeStrict(json.RawMessage(`{"n":300}`), &s); fe == nil || fe.Error() != `n: expected a smaller integer, got "300"` {
		t.Errorf("int8 300: %v", fe)
	}
}
