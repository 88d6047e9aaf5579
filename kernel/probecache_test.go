package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The cache drops what can never be asked for again: launcher answers
// given in project directories that are gone (throwaway projects made it
// grow to thousands of entries, all read at every start), interpreters
// that are gone, and launcher answers that do not name their directory.
func TestProbeCachePrunesGoneEntries(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	python, shim := file("python3"), file("shim")
	project := filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	goneDir := filepath.Join(dir, "removed-project")
	entries := map[string]probeEntry{
		python:                     {Real: python, Exe: python},
		filepath.Join(dir, "gone"): {Real: filepath.Join(dir, "gone"), Exe: python},
		launcherKey(shim, project): {Real: shim, Exe: python, ExeReal: python, Dir: project},
		launcherKey(shim, goneDir): {Real: shim, Exe: python, ExeReal: python, Dir: goneDir},
		launcherKey(shim, "old"):   {Real: shim, Exe: python, ExeReal: python},
		launcherKey(shim, dir+"x"): {Real: shim, Exe: python, ExeReal: filepath.Join(dir, "gone-python"), Dir: project},
	}
	pruneProbes(entries)
	want := map[string]bool{python: true, launcherKey(shim, project): true}
	for k := range entries {
		if !want[k] {
			t.Errorf("kept %q", k)
		}
	}
	for k := range want {
		if _, ok := entries[k]; !ok {
			t.Errorf("dropped %q, which can still be used", k)
		}
	}
}

func TestProbeCacheKeepsTheNewest(t *testing.T) {
	entries := map[string]probeEntry{}
	for i := 0; i < 300; i++ {
		entries[fmt.Sprint(i)] = probeEntry{Saved: int64(1000 + i)}
	}
	dropOldestProbes(entries, 256)
	if len(entries) != 256 {
		t.Fatalf("%d entries, want 256", len(entries))
	}
	for i := 0; i < 44; i++ {
		if _, ok := entries[fmt.Sprint(i)]; ok {
			t.Errorf("entry %d (one of the 44 oldest) kept", i)
		}
	}
}

// remember records a launcher's project directory, so the entry can be
// dropped once that directory is gone.
func TestProbeCacheRemembersTheLaunchersDirectory(t *testing.T) {
	dir := t.TempDir()
	c := &interpreterCache{path: func() string { return filepath.Join(dir, "interpreters.json") }}
	python := filepath.Join(dir, "python3")
	shim := filepath.Join(dir, "shim")
	for _, p := range []string{python, shim} {
		if err := os.WriteFile(p, []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	project := t.TempDir()
	c.remember(shim, project, Interpreter{Path: python, Version: "3.11.7"})
	e, ok := c.load()[launcherKey(shim, project)]
	if !ok || e.Dir != project || e.Saved == 0 {
		t.Fatalf("launcher entry %+v (found %v), want dir %s and a save time", e, ok, project)
	}
	if got, ok := c.lookupLauncher(shim, project); !ok || got.Path != python {
		t.Fatalf("lookupLauncher: %+v %v", got, ok)
	}
}
