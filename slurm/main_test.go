package slurm

import (
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
