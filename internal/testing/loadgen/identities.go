package loadgen

import (
	"fmt"
	"runtime/debug"
)

// Identities returns n identities of the form the IP key function gives, such as
// "ip:203.0.113.7": what every measuring program cycles through.
func Identities(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ip:203.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	return keys
}

// ModuleVersion returns the version of the module path built into the program, or "?".
func ModuleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "?"
}
