package durable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrDamagedWAL marks a value journal write-ahead log (values.db-wal)
// whose header is not a WAL header: SQLite would drop it without a word,
// and with it whatever it held. CheckValuesWAL moves it aside instead and
// says so.
var ErrDamagedWAL = errors.New("value journal write-ahead log is damaged")

// walHeaderLen is the size of an SQLite WAL header: magic, format
// version, page size, checkpoint sequence, two salts, two checksums.
const walHeaderLen = 32

// CheckValuesWAL looks at values.db-wal in the state directory dir before
// the kernels open the journal. An empty or missing file is fine (SQLite
// makes it). A file shorter than a header, with a wrong magic number or
// a header checksum that does not match is moved aside to
// values.db-wal.corrupt-TIME (with values.db-shm, the index SQLite builds
// from it) and the returned error, wrapping ErrDamagedWAL, names both,
// for the warning line. The frames after the header are SQLite's to
// check (a torn last frame after a crash is normal and ends the log).
func CheckValuesWAL(dir string) (aside string, err error) {
	p := filepath.Join(dir, ValuesFileName+"-wal")
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("value journal WAL %s: %w", p, err)
	}
	head := make([]byte, walHeaderLen)
	n, rerr := io.ReadFull(f, head)
	f.Close()
	if n == 0 && errors.Is(rerr, io.EOF) {
		return "", nil
	}
	why := walHeaderProblem(head[:n])
	if why == "" {
		return "", nil
	}
	to := p + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(p, to); err != nil {
		return "", fmt.Errorf("value journal WAL %s: %w (%s); moving it aside: %w", p, ErrDamagedWAL, why, err)
	}
	shm := filepath.Join(dir, ValuesFileName+"-shm")
	if err := os.Rename(shm, to+"-shm"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return to, fmt.Errorf("value journal WAL %s: %w (%s); moved aside to %s, but not its index %s: %w", p, ErrDamagedWAL, why, to, shm, err)
	}
	return to, fmt.Errorf("value journal WAL %s: %w (%s); moved aside to %s: values it held are computed again", p, ErrDamagedWAL, why, to)
}

// walHeaderProblem says what is wrong with a WAL header ("" if nothing):
// SQLite's format (https://www.sqlite.org/fileformat2.html#walformat).
func walHeaderProblem(h []byte) string {
	if len(h) < walHeaderLen {
		return fmt.Sprintf("%d bytes, shorter than a %d-byte header", len(h), walHeaderLen)
	}
	magic := binary.BigEndian.Uint32(h[0:4])
	if magic != 0x377f0682 && magic != 0x377f0683 {
		return fmt.Sprintf("magic number %#08x is not a WAL's", magic)
	}
	// The checksum runs over the first 24 bytes as 32-bit words, in the
	// byte order the magic number's low bit names.
	var order binary.ByteOrder = binary.LittleEndian
	if magic&1 == 1 {
		order = binary.BigEndian
	}
	var s0, s1 uint32
	for i := 0; i < 24; i += 8 {
		s0 += order.Uint32(h[i:]) + s1
		s1 += order.Uint32(h[i+4:]) + s0
	}
	if s0 != binary.BigEndian.Uint32(h[24:28]) || s1 != binary.BigEndian.Uint32(h[28:32]) {
		return "header checksum does not match"
	}
	return ""
}
