package workspace

import (
	"crypto/sha3"
	"encoding/hex"
	"unsafe"
)

// Version identifies the content of a text buffer: the lowercase hex SHA3-224
// of its UTF-8 bytes (PROTOCOL.md 3), e.g. VersionOf("123456789") is
// "5795c3d628fd638c9835a4c79a55809f265068c88729a1a3fcdf8522".
type Version string

// versionLen is the length of a Version in hex digits.
const versionLen = 2 * 28

// VersionOf returns the version of content.
func VersionOf(content string) Version {
	// Hash the string's bytes in place: Sum224 only reads its input, so the
	// read-only view is safe and saves a copy of the whole content.
	sum := sha3.Sum224(unsafe.Slice(unsafe.StringData(content), len(content)))
	var buf [versionLen]byte
	hex.Encode(buf[:], sum[:])
	return Version(buf[:])
}

// versionHex writes the version of b into dst without allocating; callers
// compare it with a Version by string(dst[:]) == string(v), which the compiler
// does without a copy.
func versionHex(dst *[versionLen]byte, b []byte) {
	sum := sha3.Sum224(b)
	hex.Encode(dst[:], sum[:])
}
