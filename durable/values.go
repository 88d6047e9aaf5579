package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ValuesFileName is the value journal's file inside the state directory.
// The kernels own its contents (kernel/python/ripple_kernel/journal.py writes it
// through SQLite); the server only decides whether there is one, keeps it
// aside for --fresh and moves a foreign file aside at start.
const ValuesFileName = "values.db"

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// ErrForeignValues marks a values file that is not an SQLite database;
// CheckValues moves it aside.
var ErrForeignValues = errors.New("value journal is not an SQLite database")

// CheckValues looks at the value journal of the state directory dir before
// the kernels open it: a file that is not an SQLite database (a foreign or
// truncated file) is moved aside to values.db.corrupt-TIME and the
// returned error, wrapping ErrForeignValues, names where, for the one
// warning line. Damage inside a database is found by the kernels, which
// move the file aside as well (ripple_kernel/journal.py). A missing file is fine.
func CheckValues(dir string) (aside string, err error) {
	p := filepath.Join(dir, ValuesFileName)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("value journal %s: %w", p, err)
	}
	head := make([]byte, len(sqliteMagic))
	n, rerr := io.ReadFull(f, head)
	f.Close()
	if n == 0 && errors.Is(rerr, io.EOF) {
		return "", nil // empty: SQLite makes a database of it
	}
	if bytes.Equal(head[:n], sqliteMagic) {
		return "", nil
	}
	aside, err = moveValuesAside(dir, "corrupt")
	if err != nil {
		return "", fmt.Errorf("value journal %s: %w; moving it aside: %w", p, ErrForeignValues, err)
	}
	return aside, fmt.Errorf("value journal %s: %w; moved aside to %s", p, ErrForeignValues, aside)
}

// MoveValuesAside keeps the value journal (with its SQLite side files) as
// values.db.WHY-TIME, for --fresh; "" when there is none.
func MoveValuesAside(dir, why string) (string, error) {
	return moveValuesAside(dir, why)
}

func moveValuesAside(dir, why string) (string, error) {
	p := filepath.Join(dir, ValuesFileName)
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	to := p + "." + why + "-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	// The write-ahead log holds committed frames not yet in the main
	// file: it moves along, under the name SQLite looks for next to it.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Rename(p+suffix, to+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	if err := os.Rename(p, to); err != nil {
		return "", err
	}
	return to, nil
}
