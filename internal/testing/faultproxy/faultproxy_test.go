package faultproxy

import (
	"slices"
	"testing"
)

// The parser finds every command's name however the stream is cut.
func TestCommandParser(t *testing.T) {
	stream := "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n*3\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n0\r\n*1\r\n$5\r\nhello\r\n"
	want := []string{"ping", "evalsha", "hello"}
	for cut := 1; cut <= len(stream); cut++ {
		var p commandParser
		var got []string
		for i := 0; i < len(stream); i += cut {
			got = append(got, p.feed([]byte(stream[i:min(i+cut, len(stream))]))...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("cut every %d bytes: got %q, want %q", cut, got, want)
		}
	}
	var p commandParser
	if got := p.feed([]byte("PING\r\n")); len(got) != 0 {
		t.Errorf("an inline command counted as %q", got)
	}
}
