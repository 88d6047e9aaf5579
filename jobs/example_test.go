package jobs_test

import (
	"fmt"

	"github.com/ripple-run/ripple/jobs"
)

// An edit of a module aborts the Executes of the contexts whose modules
// import it, compiles it on their kernels and runs them; other contexts
// keep running.
func ExampleEdit_Plan() {
	contexts := jobs.Contexts{
		"a":    {Slot: 0, BottomModule: "main", Imports: jobs.SetOf[jobs.Module]("main", "shop.cart"), ImportsKnown: true},
		"b":    {Slot: 1, BottomModule: "report", Imports: jobs.SetOf[jobs.Module]("report"), ImportsKnown: true},
		"idle": {Slot: 1, StackEmpty: true},
	}
	plan, err := jobs.Edit{Modules: jobs.SetOf[jobs.Module]("shop.cart")}.Plan(contexts)
	if err != nil {
		panic(err)
	}
	for _, a := range plan.Aborts {
		fmt.Println("abort", a.Context, "cause:", a.Cause)
	}
	fmt.Println(&plan.EnsureCompiled)
	for _, e := range plan.Executes {
		fmt.Println(&e)
	}
	// Output:
	// abort a cause: superseded by a file edit
	// EnsureCompiled({shop.cart} on slot 0)
	// Execute(a, slot 0, all, user, edit)
}
