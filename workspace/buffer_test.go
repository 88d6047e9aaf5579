package workspace

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func insertAt(line, char int, text string) []TextEdit {
	p := Position{line, char}
	return []TextEdit{{Range: Range{p, p}, Text: text}}
}

func TestBufferLifecycle(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"m.py": "x = 1\n"})
	content, v0, err := ws.OpenBuffer("c1", "m.py")
	wantErr(t, err, nil)
	if content != "x = 1\n" || v0 != VersionOf(content) {
		t.Fatalf("OpenBuffer = %q %s", content, v0)
	}
	content2, v0b, err := ws.OpenBuffer("c2", "./m.py")
	wantErr(t, err, nil)
	if content2 != content || v0b != v0 {
		t.Fatalf("second client sees %q %s", content2, v0b)
	}

	v1 := VersionOf("x = 1\ny = 2\n")
	res, err := ws.ApplyEdit("c1", "m.py", insertAt(1, 0, "y = 2\n"), v0, v1)
	wantErr(t, err, nil)
	if res.Version != v1 || len(res.Others) != 1 || res.Others[0] != "c2" {
		t.Errorf("ApplyEdit = %+v", res)
	}
	if src, _ := ws.Source("m"); src != "x = 1\ny = 2\n" {
		t.Errorf("Source(m) = %q; unsaved buffers are what runs", src)
	}
	if d, _ := ws.Dirty("m.py"); !d {
		t.Errorf("buffer should be dirty after an edit")
	}
	if got := readDisk(t, root, "m.py"); got != "x = 1\n" {
		t.Errorf("ApplyEdit touched the disk: %q", got)
	}

	// Stale or wrong versions change nothing.
	_, err = ws.ApplyEdit("c2", "m.py", insertAt(0, 0, "#"), v0, VersionOf("#x = 1\n"))
	wantErr(t, err, ErrInvalidVersion)
	if !strings.Contains(err.Error(), string(v0)) || !strings.Contains(err.Error(), string(v1)) {
		t.Errorf("error %q should name both versions", err)
	}
	_, err = ws.ApplyEdit("c2", "m.py", insertAt(0, 0, "#"), v1, VersionOf("something else"))
	wantErr(t, err, ErrInvalidVersion)
	if c, v, _ := ws.OpenBuffer("c2", "m.py"); c != "x = 1\ny = 2\n" || v != v1 {
		t.Errorf("buffer changed by rejected edits: %q %s", c, v)
	}
	// Bad ranges change nothing either.
	_, err = ws.ApplyEdit("c2", "m.py", insertAt(0, 6, "#"), v1, VersionOf("x"))
	wantErr(t, err, ErrTextEditValidation)

	// Save: stale version refused, current version written.
	wantErr(t, ws.Save("c1", "m.py", v0), ErrInvalidVersion)
	wantErr(t, ws.Save("c1", "m.py", v1), nil)
	if got := readDisk(t, root, "m.py"); got != "x = 1\ny = 2\n" {
		t.Errorf("disk after save = %q", got)
	}
	if d, _ := ws.Dirty("m.py"); d {
		t.Errorf("buffer should be clean after save")
	}
	// Editing back to what is on disk makes it clean again.
	v2 := VersionOf("x = 1\ny = 22\n")
	if _, err := ws.ApplyEdit("c1", "m.py", insertAt(1, 5, "2"), v1, v2); err != nil {
		t.Fatal(err)
	}
	del := []TextEdit{{Range: Range{Position{1, 5}, Position{1, 6}}}}
	if _, err := ws.ApplyEdit("c1", "m.py", del, v2, v1); err != nil {
		t.Fatal(err)
	}
	if d, _ := ws.Dirty("m.py"); d {
		t.Errorf("buffer equal to disk should be clean")
	}

	// Operations by a client that has not opened the file.
	_, err = ws.ApplyEdit("c3", "m.py", nil, v1, v1)
	wantErr(t, err, ErrFileNotOpened)
	wantErr(t, ws.Save("c3", "m.py", v1), ErrFileNotOpened)
	_, err = ws.CloseBuffer("c3", "m.py")
	wantErr(t, err, ErrFileNotOpened)
	_, err = ws.ApplyEdit("c1", "other.py", nil, v1, v1)
	wantErr(t, err, ErrFileNotOpened)

	// Close: the buffer lives until its last client closes it.
	if _, err := ws.ApplyEdit("c1", "m.py", insertAt(0, 0, "#"), v1, VersionOf("#x = 1\ny = 2\n")); err != nil {
		t.Fatal(err)
	}
	reverted, err := ws.CloseBuffer("c1", "m.py")
	wantErr(t, err, nil)
	if reverted {
		t.Errorf("buffer dropped while c2 still has it open")
	}
	if got := ws.OpenBuffers(); len(got) != 1 {
		t.Errorf("open buffers = %v", got)
	}
	if got := ws.CloseClient("c2"); len(got) != 1 || got[0] != "m.py" {
		t.Errorf("CloseClient = %v, want the dirty m.py reverted", got)
	}
	if got := ws.OpenBuffers(); len(got) != 0 {
		t.Errorf("open buffers after the last close = %v", got)
	}
	if src, _ := ws.Source("m"); src != "x = 1\ny = 2\n" {
		t.Errorf("Source after close = %q, want the disk content", src)
	}
}

func TestOpenBufferErrors(t *testing.T) {
	t.Parallel()
	ws, _ := setup(t, map[string]string{"d/x.py": ""})
	_, _, err := ws.OpenBuffer("c", "nope.py")
	wantErr(t, err, ErrFileNotFound)
	_, _, err = ws.OpenBuffer("c", "d")
	wantErr(t, err, ErrNotFile)
}

// TestApplyEditRace: clients racing from the same version: exactly one wins.
// Then many clients each retrying until accepted: the final buffer is the
// sequential application of the accepted edits, none lost.
func TestApplyEditRace(t *testing.T) {
	t.Parallel()
	ws, _ := setup(t, map[string]string{"r.py": ""})
	const clients = 8
	for i := range clients {
		if _, _, err := ws.OpenBuffer(ClientID(fmt.Sprint("c", i)), "r.py"); err != nil {
			t.Fatal(err)
		}
	}
	v0 := VersionOf("")
	var wins, losses sync.WaitGroup
	var mu sync.Mutex
	won := 0
	start := make(chan struct{})
	for i := range clients {
		wins.Add(1)
		go func() {
			defer wins.Done()
			text := fmt.Sprintf("line from c%d\n", i)
			<-start
			_, err := ws.ApplyEdit(ClientID(fmt.Sprint("c", i)), "r.py", insertAt(0, 0, text), v0, VersionOf(text))
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else {
				wantErr(t, err, ErrInvalidVersion)
			}
		}()
	}
	close(start)
	wins.Wait()
	if won != 1 {
		t.Fatalf("%d clients won the race from the same version, want exactly 1", won)
	}

	// Everyone appends a numbered line at the end, rebasing on each loss.
	var order []string // accepted lines, in acceptance order
	const perClient = 25
	for i := range clients {
		losses.Add(1)
		go func() {
			defer losses.Done()
			c := ClientID(fmt.Sprint("c", i))
			for n := range perClient {
				line := fmt.Sprintf("c%d-%d\n", i, n)
				for {
					content, v, err := ws.OpenBuffer(c, "r.py") // re-read the current state
					if err != nil {
						t.Error(err)
						return
					}
					_, err = ws.ApplyEdit(c, "r.py", []TextEdit{{Range: Range{EndPosition(content), EndPosition(content)}, Text: line}}, v, VersionOf(content+line))
					if err == nil {
						mu.Lock()
						order = append(order, line)
						mu.Unlock()
						break
					}
					wantErr(t, err, ErrInvalidVersion)
				}
			}
		}()
	}
	losses.Wait()
	content, _, _ := ws.OpenBuffer("c0", "r.py")
	lines := strings.SplitAfter(content, "\n")
	lines = lines[1 : len(lines)-1] // drop the race winner's line and the empty tail
	if len(lines) != clients*perClient {
		t.Fatalf("%d lines in the buffer, want %d", len(lines), clients*perClient)
	}
	// The order of acceptance is the order in the buffer: each accepted
	// edit was installed on exactly the version before it.
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("line %q twice", l)
		}
		seen[l] = true
	}
	for _, l := range order {
		if !seen[l] {
			t.Fatalf("accepted line %q lost", l)
		}
	}
}
