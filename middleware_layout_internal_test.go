package ratelimit

import (
	"testing"
	"unsafe"
)

// TestAdmittedSizeClass holds what the middleware allocates for an admitted request to its
// size class: the bytes of the header values (admittedBytes) fill what the class leaves over.
func TestAdmittedSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(admitted{}); n > 1536 {
		t.Errorf("admitted is %d bytes, past its size class of 1,536: shrink admittedBytes", n)
	}
}
