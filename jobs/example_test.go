package jobs_test

import (
	"fmt"

	"github.com/ripple-run/ripple/jobs"
)

// An edit of a module aborts every Execute, compiles the module and runs
// every context that has a stack.
func ExampleEdit_Plan() {
	contexts := jobs.Contexts{
		"a":    {Slot: 0, BottomModule: "main"},
		"b":    {Slot: 1, BottomModule: "report"},
		"idle": {Slot: 1, StackEmpty: true},
	}
	plan, err := jobs.Edit{Modules: jobs.SetOf[jobs.Module]("shop.cart")}.Plan(contexts)
	if err != nil {
		panic(err)
	}
	for _, a := range plan.Aborts {
		fmt.Println("abort all:", a.All, "cause:", a.Cause)
	}
	fmt.Println(&plan.EnsureCompiled)
	for _, e := range plan.Executes {
		fmt.Println(&e)
	}
	// Output:
	// abort all: true cause: superseded by a file edit
	// EnsureCompiled({shop.cart})
	// Execute(a, slot 0, all, user, edit)
	// Execute(b, slot 1, all, user, edit)
}
