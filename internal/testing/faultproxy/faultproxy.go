// Package faultproxy is a TCP proxy on loopback that tests put between a Redis client and a
// real redis-server, to make the network fail as it does in production: replies that come
// late, a peer that never answers (a black hole), connections refused. It also counts the
// commands the clients send, so a test can tell how many times a call reached the server.
//
// The faults are real time on a real socket: a test built on them asserts on counts and on
// bounds with a wide margin (a call that must give up before a reply held for seconds), never
// on a deadline being met to the millisecond.
package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy forwards connections from its address to a target address. It is safe for concurrent
// use.
type Proxy struct {
	target string
	addr   string

	mu       sync.Mutex
	ln       net.Listener // nil while refusing
	conns    map[net.Conn]bool
	delay    time.Duration
	black    bool
	rewrite  [2][]byte // replies' bytes to replace, and by what (as long); none when empty
	commands map[string]int
	closed   bool
	stop     chan struct{} // closed when the proxy stops: held replies are dropped
	wg       sync.WaitGroup
}

// Start starts a proxy on a free loopback port in front of target, forwarding at once. It is
// stopped, with every connection, when the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}, commands: map[string]int{}, stop: make(chan struct{})}
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.addr }

// Delay holds every reply for d before the client gets it (0: none). Requests reach the server
// at once, so the server acts on a command whose reply the client may give up waiting for.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Rewrite replaces old by new, which must be as long (RESP counts bytes), in the replies that
// carry old whole within one read of the server's (a short reply such as INFO's, say): a
// server that says something else of itself. Heal does not end it.
func (p *Proxy) Rewrite(old, new string) {
	if len(old) != len(new) || old == "" {
		panic("faultproxy: Rewrite needs two strings of one length")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rewrite = [2][]byte{[]byte(old), []byte(new)}
}

// BlackHole makes the proxy a peer that never answers: connections, new and open, are accepted
// and read, and nothing is forwarded either way.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	p.black = true
	p.mu.Unlock()
}

// Refuse closes every connection and the listening socket: connecting is refused (the port is
// closed) until Heal.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Heal ends every fault: the proxy forwards again, on the same address, without delay.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	p.delay, p.black = 0, false
	refused := p.ln == nil && !p.closed
	p.mu.Unlock()
	if !refused {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Commands returns how many commands named name (case-insensitive) the clients have sent
// through the proxy, black-holed ones included.
func (p *Proxy) Commands(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commands[strings.ToLower(name)]
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(c)
			}()
		}
	}()
}

// handle forwards one client connection until either side closes it.
func (p *Proxy) handle(client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(server) {
		server.Close()
		client.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.requests(client, server); done <- struct{}{} }()
	go func() { p.replies(server, client); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

// requests copies what the client sends to the server, counting its commands.
func (p *Proxy) requests(client, server net.Conn) {
	var parse commandParser
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			names := parse.feed(buf[:n])
			p.mu.Lock()
			for _, name := range names {
				p.commands[name]++
			}
			black := p.black
			p.mu.Unlock()
			if !black {
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// replies copies what the server answers to the client, each chunk held for the delay.
func (p *Proxy) replies(server, client net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			read := time.Now()
			p.mu.Lock()
			delay, black, rewrite := p.delay, p.black, p.rewrite
			p.mu.Unlock()
			if len(rewrite[0]) > 0 {
				copy(buf[:n], bytes.ReplaceAll(buf[:n], rewrite[0], rewrite[1]))
			}
			if !p.wait(time.Until(read.Add(delay))) {
				return
			}
			if !black {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// wait waits for d, or until the proxy stops (then it reports false).
func (p *Proxy) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.stop:
		return false
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ln == nil {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// close stops the proxy and waits for its goroutines.
func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	close(p.stop)
	p.mu.Unlock()
	p.Refuse()
	p.wg.Wait()
}

// commandParser reads the names of the RESP commands of a client's byte stream, which may
// arrive cut anywhere.
type commandParser struct {
	pending []byte
}

// feed adds b to the stream and returns the names of the commands it completes, lower-cased.
func (c *commandParser) feed(b []byte) []string {
	c.pending = append(c.pending, b...)
	var names []string
	for {
		name, n, err := parseCommand(c.pending)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return names
		}
		if err != nil { // not RESP: count nothing more on this connection
			c.pending = c.pending[:0]
			return names
		}
		names = append(names, strings.ToLower(name))
		c.pending = c.pending[n:]
	}
}

// parseCommand reads one command, "*N\r\n" then N bulk strings, and returns its name and
// length; io.ErrUnexpectedEOF when b holds only part of it.
func parseCommand(b []byte) (string, int, error) {
	count, i, err := header(b, 0, '*')
	if err != nil {
		return "", 0, err
	}
	var name string
	for k := 0; k < count; k++ {
		size, j, err := header(b, i, '$')
		if err != nil {
			return "", 0, err
		}
		if len(b) < j+size+2 {
			return "", 0, io.ErrUnexpectedEOF
		}
		if k == 0 {
			name = string(b[j : j+size])
		}
		i = j + size + 2
	}
	return name, i, nil
}

// header reads "<kind><number>\r\n" at b[i:] and returns the number and where it ends.
func header(b []byte, i int, kind byte) (int, int, error) {
	if len(b) <= i {
		return 0, 0, io.ErrUnexpectedEOF
	}
	if b[i] != kind {
		return 0, 0, errors.New("faultproxy: not a RESP command")
	}
	end := bytes.Index(b[i:], []byte("\r\n"))
	if end < 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	n, err := strconv.Atoi(string(b[i+1 : i+end]))
	if err != nil || n < 0 {
		return 0, 0, errors.New("faultproxy: bad RESP length")
	}
	return n, i + end + 2, nil
}
