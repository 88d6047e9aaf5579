//go:build !race

package lsp

const raceEnabled = false
