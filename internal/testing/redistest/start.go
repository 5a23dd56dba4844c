package redistest

import "os"

// Start starts a redis-server for a program that is not a test, such as the benchmark table of
// tools/benchtable: on a free loopback port, in a temporary directory, without persistence,
// with the extra configuration args. It returns the server's address and stop, which stops it
// (SIGTERM, then SIGKILL after 5 seconds) and removes its directory. On Linux the server also
// gets SIGTERM if the program dies without calling stop.
func Start(args ...string) (addr string, stop func() error, err error) {
	var extra func(string, int) []string
	if len(args) > 0 {
		extra = func(string, int) []string { return args }
	}
	srv, err := startServer("program", extra)
	if err != nil {
		return "", nil, err
	}
	stop = func() error {
		if err := srv.stop(); err != nil {
			return err
		}
		return os.RemoveAll(srv.dir)
	}
	return srv.addr(), stop, nil
}
