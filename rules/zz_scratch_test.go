package rules

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
)

func TestZZScratch(t *testing.T) {
	e, _ := engineFor(t, []byte(`rules:
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: ip
    policies: [{limit: 1, window: 1m}]
`))
	mux := http.NewServeMux()
	served := 0
	mux.HandleFunc("GET /search/{q}", func(w http.ResponseWriter, r *http.Request) { served++; t.Logf("q=%q", r.PathValue("q")) })
	h := ratelimit.FromGuard(e.Guard())(mux)
	for _, target := range []string{"/search/a", "/search/a", "/search/x%2Fy", "/search/x%2Fz", "/search/x%2Fz"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		t.Logf("%s: %d %v", target, w.Code, w.Header())
	}
	t.Logf("served %d", served)
}
