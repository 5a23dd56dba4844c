package ratelimit

import (
	"testing"
	"unsafe"
)

// Each shard of the memory store fills whole pairs of cache lines, so that two cores checking
// identities of two shards never write to one line.
func TestMemoryShardsFillWholeCacheLines(t *testing.T) {
	if size := unsafe.Sizeof(memoryShard{}); size%128 != 0 {
		t.Errorf("a memory shard is %d bytes, want a multiple of 128", size)
	}
	if off := unsafe.Offsetof(memoryStore{}.shards); off != 0 {
		t.Errorf("the shards start at byte %d of the store, want 0", off)
	}
}
