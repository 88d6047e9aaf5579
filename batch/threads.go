package batch

import (
	"fmt"
	"os"
	"runtime"
)

// Native thread pools of a test run's kernels.
//
// OpenBLAS, MKL, OpenMP and numexpr each start one thread per core in
// every process that loads them. A run with several kernels on one
// machine then has kernels x cores threads busy-waiting for the cores: on
// scipy's linalg suite, 2 kernels on 2 cores ran 35% slower than with one
// thread each. So each local kernel of a run with more than one gets the
// cores divided by the kernels (at least 1) in the variables those
// libraries read at start-up, as joblib's loky workers do, unless the
// user set the variable: a value in ripple's environment always wins. A
// single kernel keeps the libraries' own defaults, as pytest has them.
var threadVars = []string{
	"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
	"BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
}

// threadLimits is the "KEY=value" entries for a kernel of a run with
// kernels local kernels on a machine with cores cores; lookup reads
// ripple's environment.
func threadLimits(kernels, cores int, lookup func(string) (string, bool)) []string {
	if kernels < 2 {
		return nil
	}
	n := max(cores/kernels, 1)
	var env []string
	for _, v := range threadVars {
		if _, set := lookup(v); !set {
			env = append(env, fmt.Sprintf("%s=%d", v, n))
		}
	}
	return env
}

// kernelThreadLimits is threadLimits for this machine and environment.
func kernelThreadLimits(kernels int) []string {
	return threadLimits(kernels, runtime.NumCPU(), os.LookupEnv)
}
