//go:build unix && !linux

package redistest

import (
	"os/exec"
	"syscall"
)

// startProcess starts cmd in its own process group, so that signals sent to
// the terminal's foreground group (Ctrl-C) do not reach it directly. There is
// no parent-death signal outside Linux: servers are only stopped by Main.
func startProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}
