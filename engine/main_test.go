package engine_test

import (
	"crypto/sha3"
	"encoding/hex"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func versionOf(s string) string {
	sum := sha3.Sum224([]byte(s))
	return hex.EncodeToString(sum[:])
}
