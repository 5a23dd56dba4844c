// Package hijacktest holds what the tests of a handler that takes its connection over (a
// WebSocket upgrade) share, in the core and in the adapters: the request that asks to switch
// protocols, sent on a connection of its own, and the answer such a handler writes.
package hijacktest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// Answer is what a handler that took the connection over writes on it: 101 Switching
// Protocols, as a WebSocket server does.
const Answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

// Upgrade sends a request of method that asks to switch protocols to the server at addr, on a
// connection of its own, and returns the response it reads there. It fails t when it cannot.
func Upgrade(t testing.TB, addr, method string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, method+" / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
