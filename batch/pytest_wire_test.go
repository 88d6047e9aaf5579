package batch

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// someSlots stands for a launcher's slots: a worker with slots sends its
// worker variables in the collect request.
type someSlots struct{ engine.Kernels }

// The requests of the kernel method "pytest" as JSON: the field names and
// the omissions kernel/python/ripple_kernel/pytest_plugin.py reads (params.get), for
// each op and each option that adds or leaves out a field.
func TestPytestRequestsJSON(t *testing.T) {
	worker := func(opts Options, args []string, workers int, flags runFlags, prep func(*testRun, *testWorker)) *testWorker {
		tr := newTestRun(&opts, kernel.Interpreter{}, "/p", args, workers, flags, nil)
		tr.holders = make([]int, workers)
		w := &testWorker{id: 1, slot: -1, t: tr}
		if prep != nil {
			prep(tr, w)
		}
		return w
	}
	for _, tc := range []struct {
		name string
		req  any
		want string
	}{
		{"collect", worker(Options{}, []string{"-k", "cart"}, 2, runFlags{deps: true}, nil).collectParams(),
			`{"op":"collect","args":["-k","cart"],"worker":1,"workers":2,"purge":false,"deps":false,"watch":false}`},
		{"collect: no arguments, the first kernel's dependencies, a watch's purge",
			worker(Options{}, nil, 2, runFlags{deps: true, purge: true, watch: true}, func(_ *testRun, w *testWorker) { w.id = 0 }).collectParams(),
			`{"op":"collect","args":null,"worker":0,"workers":2,"purge":true,"deps":true,"watch":true}`},
		{"collect: a new session while the tests run neither purges nor reports dependencies",
			worker(Options{}, nil, 2, runFlags{deps: true, purge: true}, func(t *testRun, w *testWorker) { w.id, t.running = 0, true }).collectParams(),
			`{"op":"collect","args":null,"worker":0,"workers":2,"purge":false,"deps":false,"watch":false}`},
		{"collect: loadscope", worker(Options{Dist: DistLoadScope}, nil, 2, runFlags{}, nil).collectParams(),
			`{"op":"collect","args":null,"worker":1,"workers":2,"purge":false,"deps":false,"watch":false,"dist":"loadscope"}`},
		{"collect: load sends no dist", worker(Options{Dist: DistLoad}, nil, 2, runFlags{}, nil).collectParams(),
			`{"op":"collect","args":null,"worker":1,"workers":2,"purge":false,"deps":false,"watch":false}`},
		{"collect: a share, with its dependencies",
			worker(Options{}, nil, 3, runFlags{deps: true}, func(t *testRun, w *testWorker) { t.split, t.shares, w.share = true, 3, 2 }).collectParams(),
			`{"op":"collect","args":null,"worker":1,"workers":3,"purge":false,"deps":true,"watch":false,"split":{"share":2,"shares":3}}`},
		{"collect: a stolen module",
			worker(Options{}, nil, 3, runFlags{}, func(t *testRun, w *testWorker) {
				t.split, t.shares, w.share, w.steal = true, 3, 0, &stolen{file: "tests/test_a.py"}
			}).collectParams(),
			`{"op":"collect","args":null,"worker":1,"workers":3,"purge":false,"deps":false,"watch":false,"split":{"share":0,"shares":3,"only":["tests/test_a.py"]}}`},
		{"collect: a launcher's kernel gets the worker variables",
			worker(Options{}, nil, 2, runFlags{}, func(_ *testRun, w *testWorker) { w.slots, w.slot = someSlots{}, 4 }).collectParams(),
			`{"op":"collect","args":null,"worker":1,"workers":2,"purge":false,"deps":false,"watch":false,"env":{"PYTEST_XDIST_WORKER":"gw1","PYTEST_XDIST_WORKER_COUNT":"2"}}`},
		{"unittest collect", worker(Options{}, nil, 2, runFlags{}, func(t *testRun, _ *testWorker) { t.unit = true }).collectParams(),
			`{"op":"unittest","step":"collect","paths":null}`},
		{"unittest collect: paths", worker(Options{}, []string{"tests"}, 2, runFlags{}, func(t *testRun, _ *testWorker) { t.unit = true }).collectParams(),
			`{"op":"unittest","step":"collect","paths":["tests"]}`},
		{"run", worker(Options{}, nil, 2, runFlags{}, nil).runParams(opRun, []int{3, 4}),
			`{"op":"run","indices":[3,4]}`},
		{"run: other sessions open", worker(Options{}, nil, 2, runFlags{}, func(t *testRun, _ *testWorker) { t.open = 2 }).runParams(opRun, []int{3}),
			`{"op":"run","indices":[3],"yieldWide":true}`},
		{"run: the last session reports wide fixtures", worker(Options{}, nil, 2, runFlags{}, func(t *testRun, w *testWorker) { t.open, w.stay = 2, true }).runParams(opRun, []int{3}),
			`{"op":"run","indices":[3]}`},
		{"finish", worker(Options{}, nil, 2, runFlags{}, nil).runParams(opFinish, nil),
			`{"op":"finish","indices":null}`},
		{"finish: a watch keeps the session", worker(Options{}, nil, 2, runFlags{watch: true}, func(t *testRun, _ *testWorker) { t.open = 2 }).runParams(opFinish, nil),
			`{"op":"finish","indices":null,"yieldWide":true,"keep":true}`},
		{"finish: a retired session is not kept", worker(Options{}, nil, 2, runFlags{watch: true}, func(_ *testRun, w *testWorker) { w.retired = true }).runParams(opFinish, nil),
			`{"op":"finish","indices":null}`},
		{"unittest run", worker(Options{}, nil, 2, runFlags{}, func(t *testRun, _ *testWorker) { t.unit, t.open = true, 2 }).runParams(opRun, []int{0, 1}),
			`{"op":"unittest","step":"run","indices":[0,1]}`},
		{"hot", hotRequest{Op: opHot, Files: []hotFile{{Path: "shop/cart.py", Source: "x = 1\n"}}},
			`{"op":"hot","files":[{"path":"shop/cart.py","source":"x = 1\n"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("request\n%s\nwant\n%s", data, tc.want)
			}
		})
	}
}
