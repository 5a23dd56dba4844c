package loadgen

import (
	"strconv"
	"strings"
)

// CommandStat is one command's line of a Redis INFO commandstats reply.
type CommandStat struct {
	Calls int64
	Usec  int64
}

// CommandStats maps each command of an INFO commandstats reply ("evalsha", "fcall",
// "config|resetstat") to its line.
func CommandStats(info string) map[string]CommandStat {
	stats := map[string]CommandStat{}
	for line := range strings.SplitSeq(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var s CommandStat
		for field := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.Calls = n
			case "usec":
				s.Usec = n
			}
		}
		stats[name] = s
	}
	return stats
}

// InfoField returns the value of one "field:value" line of an INFO reply, "?" when it has
// none.
func InfoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "?"
}
