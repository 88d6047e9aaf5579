//go:build race

package web

// raceEnabled: the binary under test is built with the race detector too.
const raceEnabled = true
