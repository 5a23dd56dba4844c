package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"
)

// The two services behind the gateway, which the example starts itself on loopback ports. They
// do no limiting and no authentication of their own: they trust the X-Tenant-ID and
// X-Tenant-Plan headers, which only the gateway writes.

// ordersService is the orders service:
//
//	GET  /orders/{id}  the order, as JSON, with the tenant that asked
//	POST /orders       a new order: 201 Created
//	GET  /orders/fail  always 503: the service's own failure, which the gateway does not charge
func ordersService() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"id": r.PathValue("id"), "tenant": r.Header.Get(tenantHeader), "service": "orders",
		})
	})
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "order created for %s\n", r.Header.Get(tenantHeader))
	})
	mux.HandleFunc("GET /orders/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "orders: the database is unavailable", http.StatusServiceUnavailable)
	})
	return mux
}

// searchService is the search service:
//
//	GET /search/?q=...        the results, as text
//	GET /search/stream?q=...  the results as server-sent events, one event each, flushed as
//	                          each is found: pause waits between two
//
// pause returns an error when the request ends first (the client went away).
func searchService(pause func(ctx context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "results for %q, for %s\n", r.URL.Query().Get("q"), r.Header.Get(tenantHeader))
	})
	mux.HandleFunc("GET /search/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		q := r.URL.Query().Get("q")
		for i := 1; i <= streamEvents; i++ {
			if i > 1 {
				if err := pause(r.Context()); err != nil {
					return
				}
			}
			fmt.Fprintf(w, "id: %d\ndata: result %d for %q\n\n", i, i, q)
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})
	return mux
}

// streamEvents is how many events a stream sends.
const streamEvents = 3

// every returns a pause of d, for searchService.
func every(d time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// upstream is a service the example runs on a loopback port.
type upstream struct {
	url *url.URL
	srv *http.Server
}

// startUpstream serves h on a free loopback port, logging its address under name.
func startUpstream(log *slog.Logger, name string, h http.Handler) (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the %s service: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the "+name+" service stopped", "error", err)
		}
	}()
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	log.Info("upstream started", "service", name, "url", u.String())
	return &upstream{url: u, srv: srv}, nil
}

// close stops the service at once: the gateway has stopped sending it requests.
func (u *upstream) close() { _ = u.srv.Close() }
