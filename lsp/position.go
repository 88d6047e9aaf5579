package lsp

import (
	"fmt"
	"strings"
	"unicode/utf8"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
)

// encoding is the position encoding negotiated at initialize: how an LSP
// Position's character counts. ripple counts code points (utf-32), so utf-32
// needs no conversion; utf-16 (LSP's default, the only one older clients
// know) counts a character outside the Basic Multilingual Plane as two.
type encoding string

const (
	encUTF16 encoding = encoding(lsproto.PositionEncodingKindUTF16)
	encUTF32 encoding = encoding(lsproto.PositionEncodingKindUTF32)
)

// negotiate picks the position encoding from the client's offer: utf-32
// when offered (no conversion), else utf-16, which every client must
// support.
func negotiate(offered []lsproto.PositionEncodingKind) encoding {
	for _, k := range offered {
		if k == lsproto.PositionEncodingKindUTF32 {
			return encUTF32
		}
	}
	return encUTF16
}

// lineText returns line n (0-based) of text without its line end ("\n", or
// "\r\n": the "\r" belongs to the line end, as in the workspace), and false
// when text has fewer lines.
func lineText(text string, n int) (string, bool) {
	start := 0
	for range n {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			return "", false
		}
		start += i + 1
	}
	line := text[start:]
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
		line = strings.TrimSuffix(line, "\r")
	}
	return line, true
}

// toLSP converts a ripple position (code points) in text to the client's
// encoding. A position past its line's end is clamped to the end, one past
// the last line to the last line's end: LSP clients clamp too, and a stale
// range (the text changed since the run) must not fail a whole request.
func (enc encoding) toLSP(text string, p protocol.Position) lsproto.Position {
	line, ok := lineText(text, p.Line)
	if !ok {
		return lsproto.Position{Line: uint32(max(p.Line, 0)), Character: 0}
	}
	cut, n := len(line), 0
	for i := range line {
		if n == p.Character {
			cut = i
			break
		}
		n++
	}
	line = line[:cut]
	if enc == encUTF32 {
		return lsproto.Position{Line: uint32(p.Line), Character: uint32(utf8.RuneCountInString(line))}
	}
	units := 0
	for _, r := range line {
		units++
		if r > 0xFFFF {
			units++ // a surrogate pair
		}
	}
	return lsproto.Position{Line: uint32(p.Line), Character: uint32(units)}
}

// fromLSP converts a client position to a ripple position (code points) in
// text. The line must exist; a character past the line's end is clamped to
// it, as LSP says; a utf-16 offset inside a surrogate pair is refused.
func (enc encoding) fromLSP(text string, p lsproto.Position) (protocol.Position, error) {
	line, ok := lineText(text, int(p.Line))
	if !ok {
		return protocol.Position{}, fmt.Errorf("%w: line %d is past the document's last line", errPosition, p.Line)
	}
	if enc == encUTF32 {
		return protocol.Position{Line: int(p.Line), Character: min(int(p.Character), utf8.RuneCountInString(line))}, nil
	}
	units, points := 0, 0
	for _, r := range line {
		if units >= int(p.Character) {
			break
		}
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > int(p.Character) {
			return protocol.Position{}, fmt.Errorf("%w: %d:%d splits a surrogate pair (utf-16)", errPosition, p.Line, p.Character)
		}
		units += w
		points++
	}
	return protocol.Position{Line: int(p.Line), Character: points}, nil
}

// fromLSPRange converts a client range to a ripple range.
func (enc encoding) fromLSPRange(text string, r lsproto.Range) (protocol.Range, error) {
	start, err := enc.fromLSP(text, r.Start)
	if err != nil {
		return protocol.Range{}, err
	}
	end, err := enc.fromLSP(text, r.End)
	if err != nil {
		return protocol.Range{}, err
	}
	return protocol.Range{Start: start, End: end}, nil
}

// toLSPRange converts a ripple range to the client's encoding.
func (enc encoding) toLSPRange(text string, r protocol.Range) lsproto.Range {
	return lsproto.Range{Start: enc.toLSP(text, r.Start), End: enc.toLSP(text, r.End)}
}

// endOf returns the ripple position of the end of text.
func endOf(text string) protocol.Position {
	line := strings.Count(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	return protocol.Position{Line: line, Character: utf8.RuneCountInString(last)}
}
