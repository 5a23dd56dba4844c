package ratelimit_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The documents' facts that a change of the code or a new measurement would leave stale:
// the measured figures (they come from docs/results.md, which make bench writes), the tests
// they name, the files ARCHITECTURE.md maps, the modules README counts and go-redis's defaults
// it quotes. These tests read files (and a client's options) only: no benchmark runs, no Redis.

// documents returns the files whose facts these tests hold, relative to the repository's
// root: README.md and the guides under docs/ (guides), ARCHITECTURE.md and CHANGELOG.md.
func documents(t *testing.T) []string {
	return append(guides(t), "ARCHITECTURE.md", "CHANGELOG.md")
}

// guideText returns README.md and every guide, one after the other, for a fact that may be
// stated in any of them.
func guideText(t *testing.T) string {
	var all strings.Builder
	for _, d := range guides(t) {
		all.WriteString(rootFile(t, d))
		all.WriteString("\n")
	}
	return all.String()
}

// resultsFile is the file make bench writes (tools/benchtable -out).
const resultsFile = "docs/results.md"

// Figures a document takes from the results file stand between these markers.
const (
	figuresBegin = "<!-- figures: " + resultsFile + " -->"
	figuresEnd   = "<!-- /figures -->"
)

// figureText matches a measured figure: one number, or several joined by " / " or "–", and
// its unit (µs, ns, B, k/s, allocs, ×, %). A × before a letter is a product (2×Limit).
var figureText = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?(?:\s?(?:/|–)\s?\d[\d,]*(?:\.\d+)?)*)\s?(µs|ns|k/s|allocs|B\b|×(?:[^\pL]|$)|%)`)

// figure is a number and its unit, as figureText reads it.
type figure struct {
	v    float64
	unit string
}

// figuresIn returns every figure of text, each number of a joined group on its own.
func figuresIn(t *testing.T, text string) []figure {
	var out []figure
	for _, m := range figureText.FindAllStringSubmatch(text, -1) {
		for _, n := range regexp.MustCompile(`\s?(?:/|–)\s?`).Split(m[1], -1) {
			v, err := strconv.ParseFloat(strings.ReplaceAll(n, ",", ""), 64)
			if err != nil {
				t.Fatalf("figure %q: %v", m[0], err)
			}
			unit := m[2]
			if strings.HasPrefix(unit, "×") {
				unit = "×" // and the character after it, which is no letter
			}
			out = append(out, figure{v, unit})
		}
	}
	return out
}

// rootFile returns the content of a file of the repository.
func rootFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every figure a document marks as taken from docs/results.md is in that file, as the file
// has it: after a new make bench, a figure the documents still cite from the old run fails
// here until they cite the new one.
func TestDocFiguresAreInResults(t *testing.T) {
	results := map[figure]bool{}
	for _, f := range figuresIn(t, rootFile(t, resultsFile)) {
		results[f] = true
	}
	if len(results) == 0 {
		t.Fatalf("%s holds no figures", resultsFile)
	}
	regions := 0
	for _, doc := range documents(t) {
		text := rootFile(t, doc)
		for {
			_, after, ok := strings.Cut(text, figuresBegin)
			if !ok {
				break
			}
			region, rest, ok := strings.Cut(after, figuresEnd)
			if !ok {
				t.Fatalf("%s: %s without %s", doc, figuresBegin, figuresEnd)
			}
			regions++
			text = rest
			for _, f := range figuresIn(t, region) {
				if !results[f] {
					t.Errorf("%s cites %g %s from %s, which has no such figure", doc, f.v, f.unit, resultsFile)
				}
			}
		}
		if strings.Contains(text, figuresEnd) {
			t.Errorf("%s: %s without %s", doc, figuresEnd, figuresBegin)
		}
	}
	if regions == 0 {
		t.Errorf("no document marks a figure as taken from %s", resultsFile)
	}
}

// testName matches the name of a test function, a benchmark or a fuzz target in prose.
var testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)

// Every test, benchmark and fuzz target a document names exists in some module of the
// repository.
func TestDocTestNamesExist(t *testing.T) {
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)
	for _, f := range repositoryFiles(t) {
		if strings.HasSuffix(f, "_test.go") {
			for _, m := range def.FindAllStringSubmatch(rootFile(t, f), -1) {
				defined[m[1]] = true
			}
		}
	}
	// A name given to -run is a pattern: some test's name must begin with it.
	runPattern := regexp.MustCompile(`-run[ =]'?\^?$`)
	begins := func(prefix string) bool {
		for name := range defined {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
		return false
	}
	for _, doc := range documents(t) {
		text := rootFile(t, doc)
		for _, m := range testName.FindAllStringIndex(text, -1) {
			name := text[m[0]:m[1]]
			if !defined[name] && !(runPattern.MatchString(text[max(0, m[0]-8):m[0]]) && begins(name)) {
				t.Errorf("%s names %s, which no _test.go file of the repository defines", doc, name)
			}
		}
	}
}

// repositoryFiles returns every file of the repository's tree, relative to its root, but
// for .git and testdata directories.
func repositoryFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, filepath.ToSlash(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Every source file (Go, Lua, YAML) of the repository is mapped by ARCHITECTURE.md: named in
// code spans by its path, by its name, by a directory it is in, or by a pattern
// (`adapters/*/bench_test.go`, `adapters/{gin,echo}/spec_test.go`).
func TestArchitectureMapsEveryFile(t *testing.T) {
	var names []string // every name in a code span, each of a list "a, b" on its own
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(rootFile(t, "ARCHITECTURE.md"), -1) {
		for n := range strings.SplitSeq(m[1], ", ") {
			names = append(names, expandBraces(strings.TrimSpace(n))...)
		}
	}
	mapped := func(file string) bool {
		for _, n := range names {
			n = strings.TrimPrefix(n, "./")
			switch {
			case n == file, strings.HasPrefix(file, strings.TrimSuffix(n, "/")+"/"):
				return true
			case !strings.Contains(n, "/") && n == path.Base(file):
				return true
			}
			if ok, _ := path.Match(n, file); ok && strings.ContainsAny(n, "*?[") {
				return true
			}
		}
		return false
	}
	// A file's tests are beside it and named after it: x_test.go, x_internal_test.go and
	// x_more_test.go are x.go's.
	testsOf := func(file string) bool {
		stem, ok := strings.CutSuffix(file, "_test.go")
		if !ok {
			return false
		}
		stem = strings.TrimSuffix(stem, "_internal")
		for s := stem; ; {
			if mapped(s+".go") && fileExists(s+".go") {
				return true
			}
			i := strings.LastIndex(s, "_")
			if i <= strings.LastIndex(s, "/") {
				return false
			}
			s = s[:i]
		}
	}
	for _, f := range repositoryFiles(t) {
		switch path.Ext(f) {
		case ".go", ".lua", ".yml", ".yaml":
			if !mapped(f) && !testsOf(f) {
				t.Errorf("ARCHITECTURE.md does not map %s", f)
			}
		}
	}
}

// fileExists says whether the repository has the file.
func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// expandBraces expands one {a,b,c} of a pattern: adapters/{gin,echo}/x is adapters/gin/x
// and adapters/echo/x.
func expandBraces(p string) []string {
	open, close := strings.Index(p, "{"), strings.Index(p, "}")
	if open < 0 || close < open || !strings.Contains(p[open:close], ",") {
		return []string{p}
	}
	var out []string
	for alt := range strings.SplitSeq(p[open+1:close], ",") {
		out = append(out, expandBraces(p[:open]+alt+p[close+1:])...)
	}
	return out
}

// The documents' count of the modules is the repository's: every go.mod outside testdata, and
// the released ones, all but examples/ and tools/ (tools/release tags those). README or a
// guide (docs/development.md) says it, and none says another.
func TestReadmeCountsTheModules(t *testing.T) {
	var all, released []string
	for _, f := range repositoryFiles(t) {
		if path.Base(f) != "go.mod" {
			continue
		}
		dir := path.Dir(f)
		all = append(all, dir)
		if !strings.HasPrefix(dir, "examples") && !strings.HasPrefix(dir, "tools") {
			released = append(released, dir)
		}
	}
	slices.Sort(all)
	text := guideText(t)
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{`holds (\d+) modules`, all},
		{`(\d+) of them are released`, released},
	} {
		found := regexp.MustCompile(c.pattern).FindAllStringSubmatch(text, -1)
		if found == nil {
			t.Errorf("neither README nor a guide says %q", c.pattern)
		}
		for _, m := range found {
			if n, _ := strconv.Atoi(m[1]); n != len(c.want) {
				t.Errorf("the documents say %q, the repository has %d: %v", m[0], len(c.want), c.want)
			}
		}
	}
}

// The guides give go-redis's default read timeout where they say to keep one (docs/redis.md)
// and where they say what WithCallTimeout spares a caller (docs/outages.md): both are the
// default of the go-redis this module builds with, so an upgrade that changes it fails here
// until the guides follow.
func TestReadmeGoRedisReadTimeout(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	d := rdb.Options().ReadTimeout
	if d%time.Second != 0 {
		t.Fatalf("go-redis's default ReadTimeout is %v, not whole seconds: README's phrasing needs another form", d)
	}
	text := strings.Join(strings.Fields(guideText(t)), " ")
	for _, want := range []string{
		fmt.Sprintf("Keep a read timeout (go-redis's default, %d s, is right)", d/time.Second),
		fmt.Sprintf("(go-redis: %d s a read", d/time.Second),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("neither README nor a guide says %q (go-redis's default ReadTimeout is %v)", want, d)
		}
	}
	// And none gives it as another figure.
	for _, m := range regexp.MustCompile(`go-redis(?:'s default|:) (\d+) s`).FindAllStringSubmatch(text, -1) {
		if m[1] != strconv.Itoa(int(d/time.Second)) {
			t.Errorf("the documents say %q; go-redis's default ReadTimeout is %v", m[0], d)
		}
	}
}

// TestReadmeNamesTheNewestTestedReleases: README's Install names, for each adapter with a
// go.newest.mod, the release that file requires, so a bump of one cannot leave README behind.
func TestReadmeNamesTheNewestTestedReleases(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	for adapter, name := range map[string]string{"gin": "Gin", "echo": "Echo", "fiber": "Fiber", "grpc": "gRPC"} {
		mod, err := os.ReadFile(filepath.Join("adapters", adapter, "go.newest.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*\S+ (v\S+) // newest tested`).FindSubmatch(mod)
		if m == nil {
			t.Fatalf("adapters/%s/go.newest.mod marks no requirement // newest tested", adapter)
		}
		if want := name + " " + string(m[1]); !strings.Contains(text, want) {
			t.Errorf("README does not say %q, the release adapters/%s/go.newest.mod requires", want, adapter)
		}
	}
}

// Every name the root package exports has a user a newcomer can read: README, a guide under
// docs/, a program under examples/ or a runnable example (example_*_test.go) names it — a
// method as ".Name(". A name nobody shows is one a user must find in the Go documentation
// alone, or one no user needs: fold it or show it.
func TestEveryExportHasAUser(t *testing.T) {
	var corpus strings.Builder
	for _, f := range repositoryFiles(t) {
		switch {
		case f == "README.md", strings.HasPrefix(f, "docs/") && path.Ext(f) == ".md" && f != "docs/results.md",
			strings.HasPrefix(f, "examples/") && path.Ext(f) == ".go",
			!strings.Contains(f, "/") && strings.HasPrefix(f, "example_") && strings.HasSuffix(f, "_test.go"):
			corpus.WriteString(rootFile(t, f))
			corpus.WriteByte('\n')
		}
	}
	text := corpus.String()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string // "Name" for a top-level name, ".Name(" for a method of an exported type (named as a word)
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						names = append(names, d.Name.Name)
						continue
					}
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
						names = append(names, "."+d.Name.Name+"(")
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								names = append(names, s.Name.Name)
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names = append(names, n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	if len(names) < 50 {
		t.Fatalf("found %d exported names in the root package: the parse is broken", len(names))
	}
	// Methods a standard interface names, which a user reaches through it.
	through := map[string]string{".RoundTrip(": "http.RoundTripper"}
	for _, n := range names {
		if _, ok := through[n]; ok {
			continue
		}
		found := regexp.MustCompile(`\b` + strings.Trim(n, ".(") + `\b`).MatchString(text)
		if !found {
			t.Errorf("%s is exported, and neither README, docs/, examples/ nor a runnable example names it", strings.Trim(n, ".("))
		}
	}
}
