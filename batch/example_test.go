package batch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ripple-run/ripple/batch"
)

// Run the tests of a project on two kernels and write a JUnit report, as
// ripple run --tests --kernels 2 --junit does.
func ExampleRun() {
	rep, err := batch.Run(context.Background(), batch.Options{
		Root:    "testdata/project",
		Entries: []string{"test_math:test_add", "test_math:TestCalc.test_method_wrong"},
		Kernels: 2,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Results {
		fmt.Println(r.Entry.ID(), r.Status, r.Message != "")
	}
	junit := filepath.Join(os.TempDir(), "ripple-example-junit.xml")
	defer os.Remove(junit)
	if err := batch.WriteJUnit(junit, rep); err != nil {
		fmt.Println(err)
	}
	fmt.Println("failing:", rep.Summary().Failing())
	// Output:
	// test_math:test_add passed false
	// test_math:TestCalc.test_method_wrong failed true
	// failing: 1
}

// A CI matrix of three machines runs one shard each.
func ExampleParseShard() {
	shard, err := batch.ParseShard("2/3")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(shard, shard.Total)
	_, err = batch.ParseShard("4/3")
	fmt.Println(err)
	// Output:
	// 2/3 3
	// usage: --shard "4/3": want K/N with 1 <= K <= N, e.g. 2/4
}
