package workspace

import "testing"

func TestVersionOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		content string
		want    Version
	}{
		{"123456789", "5795c3d628fd638c9835a4c79a55809f265068c88729a1a3fcdf8522"},
		{"", "6b4e03423667dbb73b6e15454f0eb1abd4597f9a1b078e3f5b5a6bc7"},
	} {
		if got := VersionOf(tc.content); got != tc.want {
			t.Errorf("VersionOf(%q) = %s, want %s", tc.content, got, tc.want)
		}
		var buf [versionLen]byte
		versionHex(&buf, []byte(tc.content))
		if string(buf[:]) != string(tc.want) {
			t.Errorf("versionHex(%q) = %s, want %s", tc.content, buf[:], tc.want)
		}
	}
}
