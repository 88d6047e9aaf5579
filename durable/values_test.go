package durable

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		content *string // nil: no file
		aside   bool
	}{
		{"missing", nil, false},
		{"empty", ptr(""), false},
		{"sqlite", ptr("SQLite format 3\x00" + strings.Repeat("\x00", 100)), false},
		{"text", ptr("this is not a database\n"), true},
		{"short", ptr("SQL"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, ValuesFileName)
			if tc.content != nil {
				if err := os.WriteFile(p, []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p+"-wal", []byte("wal"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			aside, err := CheckValues(dir)
			if !tc.aside {
				if aside != "" || err != nil {
					t.Fatalf("CheckValues = %q, %v; want nothing moved", aside, err)
				}
				return
			}
			if !errors.Is(err, ErrForeignValues) || !strings.Contains(err.Error(), aside) {
				t.Fatalf("CheckValues error %v, want ErrForeignValues naming %s", err, aside)
			}
			if got, _ := os.ReadFile(aside); string(got) != *tc.content {
				t.Errorf("moved-aside file holds %q", got)
			}
			if got, _ := os.ReadFile(aside + "-wal"); string(got) != "wal" {
				t.Errorf("the WAL did not move along: %q", got)
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still there: %v", p, err)
			}
		})
	}
}

func TestMoveValuesAsideNothing(t *testing.T) {
	t.Parallel()
	if aside, err := MoveValuesAside(t.TempDir(), "fresh"); aside != "" || err != nil {
		t.Fatalf("MoveValuesAside of nothing = %q, %v", aside, err)
	}
}

func ptr(s string) *string { return &s }
