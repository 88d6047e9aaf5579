package batch

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard selects a deterministic part of the entries, so that a CI matrix
// of Total machines splits a suite: machine Index (1-based) runs the
// entries whose id hashes to it. The hash is FNV-1a of the entry id, so an
// entry stays on its shard when other entries are added or removed. The
// zero Shard selects everything.
type Shard struct {
	Index int // 1..Total
	Total int
}

// ParseShard parses K/N (1 <= K <= N).
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(k))
	total, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || total < 1 || index < 1 || index > total {
		return Shard{}, fmt.Errorf("%w: --shard %q: want K/N with 1 <= K <= N, e.g. 2/4", ErrUsage, s)
	}
	return Shard{Index: index, Total: total}, nil
}

// All reports whether the shard selects every entry.
func (s Shard) All() bool { return s.Total <= 1 }

// Has reports whether the entry with this id belongs to the shard.
func (s Shard) Has(id string) bool {
	if s.All() {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()%uint64(s.Total) == uint64(s.Index-1)
}

// String is "K/N", or "" for the zero Shard.
func (s Shard) String() string {
	if s.Total == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Total)
}
