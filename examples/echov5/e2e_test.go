package main

import (
	"os"
	"testing"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
)

func TestMain(m *testing.M) { os.Exit(exampletest.Main(m)) }

// TestExample builds the example and runs it against the contract every framework example
// shares: the limits with the memory store, Redis shared by two instances, fail-open.
func TestExample(t *testing.T) { exampletest.Contract(t) }
