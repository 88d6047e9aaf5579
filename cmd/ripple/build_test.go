package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// buildRipple builds the command into a new temporary directory (with the
// race detector when the tests run with it) and returns the directory.
func buildRipple() (string, error) {
	dir, err := os.MkdirTemp("", "ripple-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", filepath.Join(dir, "ripple")}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ripple: %v\n%s", err, out)
	}
	return dir, nil
}

// raceEnabled is set by race_test.go when the tests run with -race.
var raceEnabled bool
