package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// The headers the gateway writes for the limiter and the services: the tenant of the request's
// API key and its plan. A client's own are removed first, so that no client can name itself
// a tenant: the rules key by X-Tenant-ID, and only the gateway's value reaches them.
const (
	tenantHeader = "X-Tenant-ID"
	planHeader   = "X-Tenant-Plan"
)

// tenant is a customer of the API: its name and its plan, the tier of its rules.
type tenant struct{ id, plan string }

// tenants is the example's customer database: each API key and its tenant. A tenant may hold
// several keys; its quota is one across them.
var tenants = map[string]tenant{
	"key-acme-1":   {"acme", "pro"},
	"key-acme-2":   {"acme", "pro"},
	"key-globex-1": {"globex", "free"},
	"key-globex-2": {"globex", "free"},
}

// config is what the gateway is built from: main fills it from the flags, the tests with a
// store on a fake clock.
type config struct {
	store        ratelimit.Store
	rulesPath    string                          // the rules file
	keyHeader    string                          // the header that carries the API key
	trustProxies []string                        // networks of the proxies whose X-Forwarded-For is read
	pause        func(ctx context.Context) error // between two events of a search stream
	log          *slog.Logger
}

// gateway is the running gateway: its handler, the rules engine it limits with, and the
// services it started.
type gateway struct {
	handler   http.Handler
	engine    *rules.Engine
	upstreams []*upstream
}

// close stops the services.
func (g *gateway) close() {
	for _, u := range g.upstreams {
		u.close()
	}
}

// newGateway starts the two services and returns the gateway in front of them:
//
//	resolveTenant → the rules' guard → refuseUnknownKey → /orders/ or /search/ (a ReverseProxy)
//
// The guard charges every request before it is proxied and, by CountIf, gives the charge
// back when the service (or the proxy, unable to reach it) answers 5xx.
func newGateway(cfg config) (*gateway, error) {
	if cfg.keyHeader == "" {
		return nil, errors.New("the API key header is empty: name the header that carries it (-key-header X-API-Key)")
	}
	cfg.keyHeader = http.CanonicalHeaderKey(cfg.keyHeader)
	if cfg.keyHeader == http.CanonicalHeaderKey(tenantHeader) || cfg.keyHeader == http.CanonicalHeaderKey(planHeader) {
		return nil, fmt.Errorf("the API key header %s is one the gateway writes itself: name another", cfg.keyHeader)
	}
	guardOpts := []ratelimit.Option{
		// An upstream error is not the client's: it does not use up the quota.
		ratelimit.CountIf(func(status int) bool { return status < 500 }),
	}
	if len(cfg.trustProxies) > 0 {
		guardOpts = append(guardOpts, ratelimit.TrustProxies("X-Forwarded-For", cfg.trustProxies...))
	}
	engine, err := rules.Open(cfg.store, cfg.rulesPath,
		rules.WithTier(func(r ratelimit.Request) string { return r.Header(planHeader) }),
		rules.WithLogger(cfg.log),
		rules.WithGuardOptions(guardOpts...),
	)
	if err != nil {
		return nil, err
	}

	g := &gateway{engine: engine}
	mux := http.NewServeMux()
	for _, s := range []struct {
		name, prefix string
		handler      http.Handler
	}{
		{"orders", "/orders/", ordersService()},
		{"search", "/search/", searchService(cfg.pause)},
	} {
		u, err := startUpstream(cfg.log, s.name, s.handler)
		if err != nil {
			g.close()
			return nil, err
		}
		g.upstreams = append(g.upstreams, u)
		mux.Handle(s.prefix, proxyTo(u.url, cfg.keyHeader, cfg.log))
	}
	limited := ratelimit.FromGuard(engine.Guard())(refuseUnknownKey(cfg.keyHeader, mux))
	g.handler = resolveTenant(cfg.keyHeader, limited)
	return g, nil
}

// resolveTenant writes the tenant and the plan of the request's API key into its headers,
// after removing any the client sent. A request without a key, or with a key no tenant holds,
// has neither: the rules limit it by its client IP.
func resolveTenant(keyHeader string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(tenantHeader)
		r.Header.Del(planHeader)
		if t, ok := tenants[r.Header.Get(keyHeader)]; ok {
			r.Header.Set(tenantHeader, t.id)
			r.Header.Set(planHeader, t.plan)
		}
		next.ServeHTTP(w, r)
	})
}

// refuseUnknownKey answers 401 to a request whose API key no tenant holds. It runs after the
// guard, so that guessing keys uses up the client IP's quota.
func refuseUnknownKey(keyHeader string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(keyHeader) != "" && r.Header.Get(tenantHeader) == "" {
			http.Error(w, "unknown API key", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// proxyTo returns the reverse proxy to a service. It flushes every write of the service at
// once (FlushInterval -1), so that a stream reaches the client as the service sends it; it
// does not pass the API key on (the service trusts X-Tenant-ID instead), and it answers 502
// when the service cannot be reached.
func proxyTo(target *url.URL, keyHeader string, log *slog.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
			r.Out.Header.Del(keyHeader)
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Warn("upstream unreachable", "upstream", target.String(), "path", r.URL.Path, "error", err)
			}
			http.Error(w, "the service is unavailable", http.StatusBadGateway)
		},
	}
}
