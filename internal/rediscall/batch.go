package rediscall

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis server spends more of a short call on reading the request and writing the reply
// than on running it, and so does the client. Many concurrent requests are served faster when
// their calls travel together: the batcher sends a call straight away while few are on the
// wire, and otherwise queues it; each time a call or a batch comes back, whatever queued
// meanwhile leaves as one pipeline. An idle client therefore never waits, and a busy one sends
// pipelines as deep as the load makes them.
//
// Batching changes nothing a check does: every call is still atomic, and a pipeline is only
// their transport; where one server holds every key, the calls of a function with a merged
// form travel as one call of it (see merge.go). go-redis sends a pipeline holding a NoRetry command
// once, as it sends the command alone (see call.go); on a Cluster it splits the pipeline
// by node and follows MOVED and ASK for each call.

// onWire is how many calls or pipelines a store keeps on the wire at once before it queues:
// one in the server, one on its way back, and one being read, so the server is never idle
// while a batch is in flight.
const onWire = 3

// batcher coalesces the concurrent calls of one store into pipelines.
type batcher struct {
	process  func(ctx context.Context, cmd redis.Cmder) error // sends one command
	pipeline func() redis.Pipeliner
	// merges is set where one server holds every key the calls name: calls are merged where
	// they can be (see merge.go), until the server refuses a merged call; refused, when not
	// nil, holds what to tell then.
	merges  atomic.Bool
	refused *atomic.Pointer[func(error)]

	mu     sync.Mutex
	busy   int       // calls and pipelines on the wire
	queued []*queued // calls waiting for the wire, oldest first
}

// queued is a call waiting in the batcher's queue.
type queued struct {
	ctx   context.Context
	cmd   redis.Cmder
	state atomic.Int32 // waiting, sent or abandoned
	done  chan struct{}
}

// A queued call's states: a call abandoned before it was sent is never sent.
const (
	waiting int32 = iota
	sent
	abandoned
)

// pipeliner is a client that sends pipelines: every go-redis client.
type pipeliner interface {
	processor
	Pipeline() redis.Pipeliner
}

// newBatcher returns the batcher of client; merges says whether one server holds every key.
func newBatcher(client pipeliner, merges bool) *batcher {
	b := &batcher{process: client.Process, pipeline: client.Pipeline}
	b.merges.Store(merges)
	return b
}

// send sends cmd and returns its error (its reply is in cmd), or ctx's error if ctx ends
// first. A call that ends with ctx may still have run, as any call abandoned at its deadline.
func (b *batcher) send(ctx context.Context, cmd redis.Cmder) error {
	b.mu.Lock()
	if b.busy < onWire {
		b.busy++
		b.mu.Unlock()
		err := b.process(ctx, cmd)
		b.release()
		return err
	}
	q := &queued{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	b.queued = append(b.queued, q)
	b.mu.Unlock()
	select {
	case <-q.done:
		return cmd.Err()
	case <-ctx.Done():
		// Unsent, it never will be; sent, its reply is dropped when it comes.
		q.state.CompareAndSwap(waiting, abandoned)
		return ctx.Err()
	}
}

// release frees the wire slot of a call that came back, or hands it to the queued calls.
func (b *batcher) release() {
	b.mu.Lock()
	batch := b.queued
	b.queued = nil
	if len(batch) == 0 {
		b.busy--
	}
	b.mu.Unlock()
	if len(batch) > 0 {
		go b.flush(batch)
	}
}

// flush sends batch as a pipeline, then whatever queued meanwhile, until the queue is empty;
// it holds one wire slot throughout.
func (b *batcher) flush(batch []*queued) {
	for len(batch) > 0 {
		b.sendBatch(batch)
		b.mu.Lock()
		batch = b.queued
		b.queued = nil
		if len(batch) == 0 {
			b.busy--
		}
		b.mu.Unlock()
	}
}

// sendBatch sends the calls of batch not abandoned yet, and tells each its reply came.
func (b *batcher) sendBatch(batch []*queued) {
	cmds := make([]redis.Cmder, 0, len(batch))
	var latest time.Time // the latest deadline of the calls; zero when one has none
	open := false
	for _, q := range batch {
		if !q.state.CompareAndSwap(waiting, sent) {
			continue
		}
		cmds = append(cmds, q.cmd)
		if d, ok := q.ctx.Deadline(); !ok {
			open = true
		} else if d.After(latest) {
			latest = d
		}
	}
	// The pipeline outlives no call that waits for it: it ends at the latest deadline.
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !open && len(cmds) > 0 {
		ctx, cancel = context.WithDeadline(ctx, latest)
	}
	var merges []*merged
	if len(cmds) > 1 && b.merges.Load() {
		cmds, merges = merge(ctx, cmds)
	}
	b.exec(ctx, cmds)
	var again []redis.Cmder
	for _, m := range merges {
		if err := m.cmd.Err(); refusedMerged(err) { // it ran nothing: its calls go unmerged, from now on
			// (a key that an ACL refuses refuses its own call, merged or not: this batch only)
			if !dataRefused(err) && b.merges.CompareAndSwap(true, false) && b.refused != nil {
				if f := b.refused.Load(); f != nil {
					(*f)(err)
				}
			}
			for _, c := range m.calls {
				again = append(again, c)
			}
			continue
		}
		m.answer()
	}
	b.exec(ctx, again)
	cancel()
	for _, q := range batch {
		close(q.done)
	}
}

// exec sends cmds, one alone, several as a pipeline; each command holds its own error.
func (b *batcher) exec(ctx context.Context, cmds []redis.Cmder) {
	switch len(cmds) {
	case 0:
	case 1:
		_ = b.process(ctx, cmds[0])
	default:
		p := b.pipeline()
		for _, cmd := range cmds {
			_ = p.Process(ctx, cmd) // queues it
		}
		_, _ = p.Exec(ctx)
	}
}

// nodeBatchers keeps a batcher per server of a client that spreads keys over several (the
// Cluster client, the Ring), so that a slow or dead node holds up only the calls that go to it.
// The client still routes every call, so a call that went to the wrong batcher (its slot just
// moved) is only batched with the wrong neighbours.
type nodeBatchers struct {
	client pipeliner
	node   func(ctx context.Context, key string) (*redis.Client, error) // the server of key
	byNode sync.Map                                                     // address -> *batcher
}

func newNodeBatchers(client pipeliner, node func(ctx context.Context, key string) (*redis.Client, error)) *nodeBatchers {
	return &nodeBatchers{client: client, node: node}
}

// send sends cmd through the batcher of the node of its first key (see [batcher.send]).
func (n *nodeBatchers) send(ctx context.Context, cmd redis.Cmder) error {
	key, ok := cmd.Args()[Head].(*string)
	if !ok {
		return n.client.Process(ctx, cmd)
	}
	node, err := n.node(ctx, *key)
	if err != nil {
		return n.client.Process(ctx, cmd) // the client finds the node, or reports why not
	}
	addr := node.Options().Addr
	b, ok := n.byNode.Load(addr)
	if !ok {
		b, _ = n.byNode.LoadOrStore(addr, newBatcher(n.client, false))
	}
	return b.(*batcher).send(ctx, cmd)
}
