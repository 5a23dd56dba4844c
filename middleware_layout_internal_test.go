package ratelimit

import (
	"testing"
	"unsafe"
)

// mallocHeader is what Go (1.22 on) puts before an object of more than 512 bytes that holds
// pointers, inside the object's size class.
const mallocHeader = 8

// TestAdmittedSizeClass holds what the middleware allocates for an admitted request to its
// size class: the bytes of the header values (admittedBytes) fill what the class leaves over,
// the malloc header's included (admitted of exactly 1,536 bytes took the class of 1,792:
// BenchmarkFiber's nethttp-limited measured 1,809 B/op, 512 more than with admitted in the
// class of 1,280, not 256).
func TestAdmittedSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(admitted{}) + mallocHeader; n > 1536 {
		t.Errorf("admitted is %d bytes with its malloc header, past its size class of 1,536: shrink admittedBytes", n)
	}
}
