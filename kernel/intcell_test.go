package kernel

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"testing"
)

// What announce stores is what a process mapping the file reads.
func TestInterruptCellIsSharedThroughItsFile(t *testing.T) {
	cell, f, err := newInterruptCell()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer cell.close()
	for _, id := range []uint64{1, 0x0102030405060708, 1<<63 + 5} {
		cell.announce(id)
		var buf [interruptCellSize]byte
		if _, err := f.ReadAt(buf[:], 0); err != nil {
			t.Fatal(err)
		}
		if got := binary.NativeEndian.Uint64(buf[:]); got != id {
			t.Fatalf("file holds %#x after announce(%#x)", got, id)
		}
	}
	cell.close()
	cell.close() // idempotent
}

// The fallback where memfd is missing leaves no name behind.
func TestUnlinkedTempFileHasNoName(t *testing.T) {
	f, err := unlinkedTempFile("ripple-test")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := os.Stat(f.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s: %v, want it gone", f.Name(), err)
	}
	if _, err := f.Write([]byte("still usable")); err != nil {
		t.Fatal(err)
	}
}
