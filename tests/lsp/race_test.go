//go:build race

package lsp

const raceEnabled = true
