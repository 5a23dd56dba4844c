package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// startAttempts bounds how many times a server start is retried, each time
	// on a fresh port, when redis-server fails to start (typically because
	// another process grabbed the port in the meantime).
	startAttempts = 5
	// readyTimeout bounds how long a started server has to answer.
	readyTimeout = 10 * time.Second
	// stopTimeout is how long a server gets to exit after SIGTERM before it
	// is sent SIGKILL.
	stopTimeout = 5 * time.Second
	// reapTimeout bounds the wait for a SIGKILLed process to be reaped.
	reapTimeout = 10 * time.Second
	// busOffset is the distance between a cluster node's client port and its
	// cluster bus port (Redis' default, which CLUSTER MEET assumes).
	busOffset = 10000
	// loopback is the only address servers listen on.
	loopback = "127.0.0.1"
)

// proc is one run of a redis-server process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // result of cmd.Wait; valid once done is closed
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// server is a redis-server started by this package. It keeps its port and
// temporary directory across Kill/Restart.
type server struct {
	name  string                              // for messages, e.g. "standalone"
	bin   string                              // path of redis-server
	dir   string                              // temporary working directory
	extra func(dir string, port int) []string // extra arguments, may be nil
	// sentinel, when set, makes the process a Sentinel with this configuration (a Sentinel
	// needs a configuration file it can rewrite).
	sentinel string

	mu     sync.Mutex
	port   int    // fixed once the first start succeeded
	proc   *proc  // current run; nil after kill
	log    string // log file of the latest run
	closed bool   // set by stop; no new run may start afterwards
}

// registry tracks every server started, for Main to stop, and every port
// handed out, so concurrent starts in this process never pick the same one.
var registry struct {
	mu      sync.Mutex
	servers []*server
	ports   map[int]bool
	stopped bool
}

// startServer starts a new redis-server on a free loopback port, retrying on
// other ports if it fails to start. extra, if not nil, returns additional
// command-line arguments for a given directory and port.
func startServer(name string, extra func(dir string, port int) []string) (*server, error) {
	return startServerAs(name, extra, "")
}

// startServerAs is startServer for a Sentinel too: sentinel, when set, is its configuration.
func startServerAs(name string, extra func(dir string, port int) []string, sentinel string) (*server, error) {
	bin, err := lookPath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &server{name: name, bin: bin, dir: dir, extra: extra, sentinel: sentinel}
	if err := register(s); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		port, err := freePort(extra != nil)
		if err == nil {
			err = s.spawnLocked(port)
		}
		if err == nil {
			s.port = port
			return s, nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
	}
	return nil, fmt.Errorf("%s redis-server failed to start (%d attempts):\n%w",
		name, startAttempts, errors.Join(errs...))
}

// register adds s to the registry, unless Main has already stopped everything.
func register(s *server) error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.stopped {
		return errors.New("redistest: servers already stopped by Main; cannot start " + s.name)
	}
	registry.servers = append(registry.servers, s)
	return nil
}

// freePort returns a loopback port that is free right now and was not handed
// out before in this process. If withBus is set, port+busOffset (the cluster
// bus port) is free too.
func freePort(withBus bool) (int, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.ports == nil {
		registry.ports = make(map[int]bool)
	}
	// Keep every listener open until we return, so that the kernel offers a
	// different port on each try.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for range 100 {
		l, err := net.Listen("tcp", loopback+":0")
		if err != nil {
			return 0, fmt.Errorf("find free port: %w", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if registry.ports[port] {
			continue
		}
		if withBus {
			bus := port + busOffset
			if bus > 65535 || registry.ports[bus] {
				continue
			}
			bl, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(bus)))
			if err != nil {
				continue
			}
			held = append(held, bl)
			registry.ports[bus] = true
		}
		registry.ports[port] = true
		return port, nil
	}
	return 0, errors.New("find free port: no suitable port after 100 tries")
}

// addr returns the server's host:port address.
func (s *server) addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort(loopback, strconv.Itoa(s.port))
}

// spawnLocked starts redis-server on port and waits until it answers. The
// caller holds s.mu. On failure no process is left running.
func (s *server) spawnLocked(port int) error {
	if s.closed {
		return errors.New(s.name + " redis-server was stopped by Main")
	}
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", port))
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", loopback,
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "", // log to stdout, which goes to logPath
		"--loglevel", "warning",
	}
	if s.extra != nil {
		args = append(args, s.extra(s.dir, port)...)
	}
	if s.sentinel != "" {
		conf := filepath.Join(s.dir, fmt.Sprintf("sentinel-%d.conf", port))
		if err := os.WriteFile(conf, []byte(s.sentinel), 0o644); err != nil {
			return err
		}
		args = append(append([]string{conf}, args...), "--sentinel")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	err = startProcess(cmd)
	_ = logFile.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.proc, s.log = p, logPath

	addr := net.JoinHostPort(loopback, strconv.Itoa(port))
	if err := waitReady(addr, p); err != nil {
		_ = terminate(p, 0)
		s.proc = nil
		return fmt.Errorf("%s redis-server (pid %d) on %s: %w%s",
			s.name, cmd.Process.Pid, addr, err, logTail(logPath))
	}
	return nil
}

// waitReady polls addr until the redis-server run p answers, p exits, or
// readyTimeout passes.
func waitReady(addr string, p *proc) error {
	pid := p.cmd.Process.Pid
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("exited during startup (%v)", p.err)
		}
		ok, err := probe(addr, pid)
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v (last probe: %v)", readyTimeout, last)
		}
		select {
		case <-p.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// probe sends INFO server to addr and reports whether the reply comes from a
// ready redis-server with process id pid. Checking the process id makes sure
// we never mistake some other server that raced us for this port for ours.
func probe(addr string, pid int) (bool, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return false, err
	}
	if _, err := io.WriteString(conn, "INFO server\r\n"); err != nil {
		return false, err
	}
	r := bufio.NewReader(conn)
	header, err := r.ReadString('\n')
	if err != nil {
		return false, err
	}
	header = strings.TrimRight(header, "\r\n")
	if !strings.HasPrefix(header, "$") {
		return false, fmt.Errorf("unexpected reply %q", header)
	}
	n, err := strconv.Atoi(header[1:])
	if err != nil || n < 0 {
		return false, fmt.Errorf("unexpected reply %q", header)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return false, err
	}
	want := "process_id:" + strconv.Itoa(pid)
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.TrimSpace(line) == want {
			return true, nil
		}
	}
	return false, fmt.Errorf("%s is served by another process (want %s)", addr, want)
}

// terminate stops the run p: SIGTERM first if grace > 0, SIGKILL if it has
// not exited after grace, then waits for it to be reaped.
func terminate(p *proc, grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if grace > 0 && p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		select {
		case <-p.done:
			return nil
		case <-time.After(grace):
		}
	}
	if err := p.cmd.Process.Kill(); err != nil && !p.exited() {
		return fmt.Errorf("kill pid %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(reapTimeout):
		return fmt.Errorf("pid %d still running %v after SIGKILL", p.cmd.Process.Pid, reapTimeout)
	}
}

// kill stops the server abruptly with SIGKILL. It does nothing if the server
// is not running.
func (s *server) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if err := terminate(s.proc, 0); err != nil {
		return err
	}
	s.proc = nil
	return nil
}

// restart starts the server again on its port if it is not running, retrying
// a few times in case the port is briefly unavailable.
func (s *server) restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return nil
	}
	s.proc = nil
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		err := s.spawnLocked(s.port)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
		if s.closed {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.Join(errs...)
}

// stop shuts the server down for good: SIGTERM, then SIGKILL after
// stopTimeout.
func (s *server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.proc == nil {
		return nil
	}
	err := terminate(s.proc, stopTimeout)
	if err == nil {
		s.proc = nil
	}
	return err
}

// stopAll stops every server started by this package and removes their
// temporary directories. Problems are reported on stderr, as there is no
// test left to fail.
func stopAll() {
	registry.mu.Lock()
	registry.stopped = true
	servers := registry.servers
	registry.servers = nil
	registry.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.stop(); err != nil {
				fmt.Fprintf(os.Stderr, "redistest: stopping %s redis-server: %v\n", s.name, err)
				return // keep the directory: the process may still use it
			}
			if err := os.RemoveAll(s.dir); err != nil {
				fmt.Fprintf(os.Stderr, "redistest: removing %s: %v\n", s.dir, err)
			}
		}()
	}
	wg.Wait()
}

// logTail returns the last lines of a server log, formatted to be appended
// to an error message, or "" if the log is empty or unreadable.
func logTail(path string) string {
	const maxBytes, maxLines = 4096, 20
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		_, _ = f.Seek(-maxBytes, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	text := strings.Join(lines, "\n\t")
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return "\n\tlog " + path + ":\n\t" + text
}

// logTail returns the tail of the server's latest log, for error messages.
func (s *server) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return logTail(s.log)
}
