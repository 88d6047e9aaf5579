package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ripple-run/ripple/workspace"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "main.py"), []byte("x = 1\n"), 0o644)

	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()

	// A client opens the file and types a line; the buffer's content is
	// what the module's source is from now on, saved or not.
	content, v1, _ := ws.OpenBuffer("client-1", "main.py")
	edit := workspace.TextEdit{Range: workspace.Range{Start: workspace.Position{Line: 1}, End: workspace.Position{Line: 1}}, Text: "y = x + 1\n"}
	v2 := workspace.VersionOf(content + "y = x + 1\n")
	if _, err := ws.ApplyEdit("client-1", "main.py", []workspace.TextEdit{edit}, v1, v2); err != nil {
		fmt.Println(err)
		return
	}
	src, _ := ws.Source("main")
	fmt.Printf("%q\n", src)

	// A stale version is refused and changes nothing.
	_, err = ws.ApplyEdit("client-1", "main.py", nil, v1, v1)
	fmt.Println(err != nil)

	// Paths never leave the project root.
	_, err = ws.Read("../../etc/passwd")
	fmt.Println(err)

	if err := ws.Save("client-1", "main.py", v2); err != nil {
		fmt.Println(err)
	}
	// Output:
	// "x = 1\ny = x + 1\n"
	// true
	// ../../etc/passwd: path outside the project root: ".." leads above the project root
}

func ExampleWatcher() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "main.py"), []byte("x = 1\n"), 0o644)
	ws, _ := workspace.Open(dir, workspace.Options{})
	defer ws.Close()

	// One batch per burst: the tree must stay quiet for Debounce first.
	w := workspace.NewWatcher(ws, workspace.WatchOptions{Debounce: 200 * time.Millisecond})
	if err := w.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop(context.Background())

	// An editor saves the file the "safe" way: a temp file renamed over it.
	tmp := filepath.Join(dir, ".main.py.swp")
	os.WriteFile(tmp, []byte("x = 2\n"), 0o644)
	os.Rename(tmp, filepath.Join(dir, "main.py"))

	batch := <-w.Batches()
	fmt.Println(batch.Changes, batch.Modules)
	// Output: [{main.py Modified}] [main]
}
