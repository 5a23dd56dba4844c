package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// toolVersion prints the version of the command itself, as the Go toolchain recorded it in
// the binary: the module's version (a release installed with go install …@vX.Y.Z, or
// "(devel)" when built from source), the module, the commit when the build recorded one, and
// the Go version. "ratelimit version" is the rules' version, in Redis.
func toolVersion(w io.Writer) {
	info, ok := debug.ReadBuildInfo()
	if !ok { // a binary built without module support
		fmt.Fprintln(w, "ratelimit (unknown: the binary records no build information)")
		return
	}
	version := info.Main.Version
	switch version {
	case "", "(devel)":
		fmt.Fprintln(w, "ratelimit (devel), built from source, not a release")
	default:
		fmt.Fprintln(w, "ratelimit "+version)
	}
	fmt.Fprintf(w, "module     %s\n", info.Main.Path)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += " (modified)"
		}
		fmt.Fprintf(w, "commit     %s\n", rev)
	}
	fmt.Fprintf(w, "go         %s\n", info.GoVersion)
}
