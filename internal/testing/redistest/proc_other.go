//go:build !unix

package redistest

import "os/exec"

// startProcess starts cmd. On this platform there is neither a separate
// process group nor a parent-death signal: servers are only stopped by Main.
func startProcess(cmd *exec.Cmd) error {
	return cmd.Start()
}
