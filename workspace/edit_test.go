package workspace

import (
	"errors"
	"testing"
)

func TestApplyEdits(t *testing.T) {
	t.Parallel()
	r := func(l1, c1, l2, c2 int) Range { return Range{Position{l1, c1}, Position{l2, c2}} }
	for _, tc := range []struct {
		name    string
		content string
		edits   []TextEdit
		want    string
		wantErr bool
	}{
		{"insert at start", "abc", []TextEdit{{r(0, 0, 0, 0), "x"}}, "xabc", false},
		{"insert at end of line", "abc\ndef", []TextEdit{{r(0, 3, 0, 3), "!"}}, "abc!\ndef", false},
		{"end of content", "abc\n", []TextEdit{{r(1, 0, 1, 0), "z"}}, "abc\nz", false},
		{"replace across lines", "abc\ndef\nghi", []TextEdit{{r(0, 1, 2, 1), "-"}}, "a-hi", false},
		{"code points, not bytes", "é😀x\n", []TextEdit{{r(0, 2, 0, 3), "y"}}, "é😀y\n", false},
		{"CJK", "日本語\n", []TextEdit{{r(0, 1, 0, 2), "_"}}, "日_語\n", false},
		{"crlf: end of line is before \\r", "ab\r\ncd\r\n", []TextEdit{{r(0, 2, 0, 2), "!"}}, "ab!\r\ncd\r\n", false},
		{"crlf: joining lines removes \\r\\n", "ab\r\ncd", []TextEdit{{r(0, 2, 1, 0), ""}}, "abcd", false},
		{"lone \\r is a character", "a\rb\n", []TextEdit{{r(0, 2, 0, 3), "B"}}, "a\rB\n", false},
		{"edits apply in order", "abc", []TextEdit{{r(0, 0, 0, 1), "xy"}, {r(0, 1, 0, 2), "Z"}}, "xZbc", false},
		{"no edits", "abc", nil, "abc", false},
		{"delete all", "a\nb\n", []TextEdit{{r(0, 0, 2, 0), ""}}, "", false},

		{"line past the end", "abc\n", []TextEdit{{r(2, 0, 2, 0), "x"}}, "", true},
		{"character past end of line", "abc\ndef", []TextEdit{{r(0, 4, 0, 4), "x"}}, "", true},
		{"between \\r and \\n", "ab\r\ncd", []TextEdit{{r(0, 3, 0, 3), "x"}}, "", true},
		{"character past end of last line", "abc", []TextEdit{{r(0, 0, 0, 4), "x"}}, "", true},
		{"negative", "abc", []TextEdit{{r(0, -1, 0, 0), "x"}}, "", true},
		{"end before start", "abc", []TextEdit{{r(0, 2, 0, 1), "x"}}, "", true},
		{"second edit out of range of the first's result", "abc", []TextEdit{{r(0, 0, 0, 3), ""}, {r(0, 1, 0, 1), "x"}}, "", true},
		{"invalid UTF-8 text", "abc", []TextEdit{{r(0, 0, 0, 0), "\xff"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := applyEdits(tc.content, tc.edits)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("applyEdits = %q, want an error", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("applyEdits = %q, want %q", out, tc.want)
			}
		})
	}
}

func TestApplyEditErrorsNameTheRange(t *testing.T) {
	t.Parallel()
	ws, _ := setup(t, map[string]string{"m.py": "ab\ncd\n"})
	_, v, _ := ws.OpenBuffer("c", "m.py")
	_, err := ws.ApplyEdit("c", "m.py", insertAt(0, 0, "x"), v, VersionOf("xab\ncd\n"))
	wantErr(t, err, nil)
	v = VersionOf("xab\ncd\n")
	_, err = ws.ApplyEdit("c", "m.py", []TextEdit{{Range{Position{1, 0}, Position{1, 1}}, ""}, {Range{Position{1, 5}, Position{1, 5}}, "y"}}, v, v)
	if !errors.Is(err, ErrTextEditValidation) {
		t.Fatalf("err = %v", err)
	}
	want := "m.py: invalid text edit: edit 2: range start: position 1:5: line 1 has only 1 characters"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestEndPosition(t *testing.T) {
	t.Parallel()
	for content, want := range map[string]Position{"": {0, 0}, "ab": {0, 2}, "ab\n": {1, 0}, "a\nbé": {1, 2}} {
		if got := EndPosition(content); got != want {
			t.Errorf("EndPosition(%q) = %v, want %v", content, got, want)
		}
	}
}
