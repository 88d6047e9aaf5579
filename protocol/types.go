package protocol

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Path is a POSIX-style path relative to the project root ("pkg/util.py").
// Whether it stays inside the root is the workspace's check, not the
// decoder's.
type Path = string

// ContextID names an execution context: a UUID chosen by the client, or by
// the server when executionContext/create has none.
type ContextID string

// VisualizationID names a visualization: a UUID chosen by the client.
type VisualizationID string

// NewContextID returns a random (version 4) UUID.
func NewContextID() ContextID { return ContextID(newUUID()) }

// NewVisualizationID returns a random (version 4) UUID.
func NewVisualizationID() VisualizationID { return VisualizationID(newUUID()) }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// IsUUID reports whether s is a UUID in its canonical text form
// (8-4-4-4-12 hex digits, either case).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Position is a place in a text: 0-based line and 0-based character, where
// character counts Unicode code points.
type Position struct {
	Line      int `json:"line" decode:"min=0"`
	Character int `json:"character" decode:"min=0"`
}

func (p Position) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"line":`...)
	dst = strconv.AppendInt(dst, int64(p.Line), 10)
	dst = append(dst, `,"character":`...)
	dst = strconv.AppendInt(dst, int64(p.Character), 10)
	return append(dst, '}')
}

// UnmarshalJSON decodes strictly: both fields required, non-negative integers.
func (p *Position) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// Before reports whether p comes before q.
func (p Position) Before(q Position) bool {
	return p.Line < q.Line || p.Line == q.Line && p.Character < q.Character
}

// Range is the span from Start up to (not including) End.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

func (r *Range) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"start":`...)
	dst = r.Start.appendJSON(dst)
	dst = append(dst, `,"end":`...)
	dst = r.End.appendJSON(dst)
	return append(dst, '}')
}

// UnmarshalJSON decodes strictly.
func (r *Range) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, r) }

// MethodPointer names a function: Module is the dotted module name,
// DefinedOnType the class for a method ("" for a module function) and Name
// the function's name. Its text form is module:qualname ("main:main",
// "shop.cart:Cart.total").
type MethodPointer struct {
	Module        string `json:"module"`
	DefinedOnType string `json:"definedOnType" decode:"optional"` // absent is taken as ""
	Name          string `json:"name"`
}

// ErrBadMethodPointer is wrapped by ParseMethodPointer and
// MethodPointer.Validate errors.
var ErrBadMethodPointer = errors.New("invalid method pointer")

// ParseMethodPointer parses the text form module:qualname. The qualname's
// last dotted part is the name, the rest the defining type (nested classes
// keep their dots: "m:Outer.Inner.f" has DefinedOnType "Outer.Inner").
func ParseMethodPointer(s string) (MethodPointer, error) {
	module, qualname, ok := strings.Cut(s, ":")
	if !ok {
		return MethodPointer{}, fmt.Errorf("%w %q: want module:qualname", ErrBadMethodPointer, s)
	}
	var mp MethodPointer
	mp.Module = module
	if i := strings.LastIndexByte(qualname, '.'); i == 0 {
		return MethodPointer{}, fmt.Errorf("%w %q: qualname %q has an empty class name", ErrBadMethodPointer, s, qualname)
	} else if i > 0 {
		mp.DefinedOnType, mp.Name = qualname[:i], qualname[i+1:]
	} else {
		mp.Name = qualname
	}
	if err := mp.Validate(); err != nil {
		return MethodPointer{}, fmt.Errorf("%w (parsing %q)", err, s)
	}
	return mp, nil
}

// DisplayVisualization is the built-in visualization expression whose
// data is the value's mime bundle (PROTOCOL.md 7.2).
const DisplayVisualization = "ripple:display"

// ScriptName is the name of a MethodPointer that names a module's top
// level run as a script (PROTOCOL.md 7.1): `main:__main__`.
const ScriptName = "__main__"

// IsScript reports whether mp names a module's top level run as a script
// (module:__main__).
func (mp MethodPointer) IsScript() bool {
	return mp.DefinedOnType == "" && mp.Name == ScriptName
}

// Qualname returns "Type.name" for a method and "name" for a module function.
func (mp MethodPointer) Qualname() string {
	if mp.DefinedOnType == "" {
		return mp.Name
	}
	return mp.DefinedOnType + "." + mp.Name
}

// String returns the text form module:qualname.
func (mp MethodPointer) String() string { return mp.Module + ":" + mp.Qualname() }

// Validate checks that Module is a dotted name, DefinedOnType empty or a
// dotted name, and Name an identifier.
func (mp MethodPointer) Validate() error {
	switch {
	case !isDottedName(mp.Module):
		return fmt.Errorf("%w: module %q is not a dotted module name", ErrBadMethodPointer, mp.Module)
	case mp.DefinedOnType != "" && !isDottedName(mp.DefinedOnType):
		return fmt.Errorf("%w: definedOnType %q is not a class name", ErrBadMethodPointer, mp.DefinedOnType)
	case !isIdentifier(mp.Name):
		return fmt.Errorf("%w: name %q is not an identifier", ErrBadMethodPointer, mp.Name)
	}
	return nil
}

func (mp *MethodPointer) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"module":`...)
	dst = appendQuoted(dst, mp.Module)
	dst = append(dst, `,"definedOnType":`...)
	dst = appendQuoted(dst, mp.DefinedOnType)
	dst = append(dst, `,"name":`...)
	dst = appendQuoted(dst, mp.Name)
	return append(dst, '}')
}

// UnmarshalJSON decodes strictly: module and name required.
func (mp *MethodPointer) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, mp) }

// isIdentifier approximates Python's identifier rule: a letter or '_'
// followed by letters, digits and '_'.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)) {
			continue
		}
		return false
	}
	return true
}

func isDottedName(s string) bool {
	if s == "" {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !isIdentifier(part) {
			return false
		}
	}
	return true
}

// ExpressionID names one statement of a function body: module:qualname/label
// ("main:main/total", "shop.cart:Cart.total/x#2", "main:main/#3").
type ExpressionID string

// ErrBadExpressionID is wrapped by ExpressionID.Split errors.
var ErrBadExpressionID = errors.New("invalid expression id")

// NewExpressionID returns the id of the statement labelled label in fn.
func NewExpressionID(fn MethodPointer, label string) ExpressionID {
	return ExpressionID(fn.String() + "/" + label)
}

// wellFormed reports whether Split would succeed, without allocating.
func (id ExpressionID) wellFormed() bool {
	s := string(id)
	slash := strings.IndexByte(s, '/')
	if slash < 0 || slash == len(s)-1 {
		return false
	}
	module, qualname, ok := strings.Cut(s[:slash], ":")
	if !ok || !isDottedName(module) {
		return false
	}
	if i := strings.LastIndexByte(qualname, '.'); i >= 0 {
		return i > 0 && isDottedName(qualname[:i]) && isIdentifier(qualname[i+1:])
	}
	return isIdentifier(qualname)
}

// Split returns the function an expression belongs to and its label.
func (id ExpressionID) Split() (fn MethodPointer, label string, err error) {
	s := string(id)
	slash := strings.IndexByte(s, '/')
	if slash < 0 || slash == len(s)-1 {
		return MethodPointer{}, "", fmt.Errorf("%w %q: want module:qualname/label", ErrBadExpressionID, s)
	}
	fn, err = ParseMethodPointer(s[:slash])
	if err != nil {
		return MethodPointer{}, "", fmt.Errorf("%w %q: %w", ErrBadExpressionID, s, err)
	}
	return fn, s[slash+1:], nil
}
