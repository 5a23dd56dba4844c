//go:build linux

package redistest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// spawnRequest asks the spawner goroutine to start a command.
type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan<- error
}

var (
	spawnOnce sync.Once
	spawnCh   = make(chan spawnRequest)
)

// startProcess starts cmd in its own process group, so that signals sent to
// the terminal's foreground group (Ctrl-C) do not reach it directly, and with
// a parent-death signal, so that it gets SIGTERM if the test binary dies
// without stopping it (panic, test timeout, SIGKILL).
//
// Linux delivers the parent-death signal when the OS thread that forked the
// child exits, not the whole process. Go may retire threads, so all servers
// are forked from one goroutine that stays locked to its thread for the life
// of the process.
func startProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGTERM,
	}
	spawnOnce.Do(func() { go spawner() })
	errc := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

// spawner starts the commands it receives, from a thread that never exits.
func spawner() {
	runtime.LockOSThread() // never unlocked: the thread must outlive the children
	for req := range spawnCh {
		req.errc <- req.cmd.Start()
	}
}
