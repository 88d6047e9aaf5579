package main

import (
	"os"
	"path/filepath"
	"regexp"

	"github.com/ripple-run/ripple/protocol"
)

// mainDef matches a top-level definition of main in main.py's text.
var mainDef = regexp.MustCompile(`(?m)^(?:async\s+)?def\s+main\s*\(|^main\s*[:=]`)

// defaultEntry is the entry ripple watch runs without --entry (PROTOCOL.md
// 7.1): main:main when main.py defines main, else main:__main__ (main.py
// run as a script). A project without main.py gets main:main, whose error
// names the missing module.
func defaultEntry(root string) protocol.MethodPointer {
	text, err := os.ReadFile(filepath.Join(root, "main.py"))
	if err == nil && !mainDef.Match(text) {
		return protocol.MethodPointer{Module: "main", Name: protocol.ScriptName}
	}
	return protocol.MethodPointer{Module: "main", Name: "main"}
}
