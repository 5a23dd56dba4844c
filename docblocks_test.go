package ratelimit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// guides returns README.md and the guides under docs/, relative to the repository's root:
// the documents whose code blocks are tested as written. docs/results.md, which make bench
// writes, is no guide.
func guides(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		if d = filepath.ToSlash(d); d != resultsFile {
			out = append(out, d)
		}
	}
	return out
}

// docBlock is a fenced code block of a document.
type docBlock struct {
	doc, lang, body string
	line            int // of its opening fence, from 1
	fence           int // the offset of its opening fence's backquotes in the document
}

// fencedBlocks returns the fenced blocks of a document, in order: a line whose first
// non-blank characters are three backquotes opens one (the language after them), and the next
// such line closes it.
func fencedBlocks(doc, text string) []docBlock {
	var out []docBlock
	var open *docBlock
	offset := 0
	for i, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, "```") {
			if open == nil {
				open = &docBlock{doc: doc, lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1,
					fence: offset + len(line) - len(trimmed)}
			} else {
				open.body = text[open.fence+len("```"+open.lang+"\n") : offset]
				out = append(out, *open)
				open = nil
			}
		}
		offset += len(line)
	}
	return out
}

// A test reads a block of a document as written, through internal/testing/readmetest or a
// helper over it: Block(t, doc, marker, lang), the first block of lang after marker;
// Containing(t, doc, text, lang), the one block that contains text. This test finds, in every
// _test.go file of the repository (every module), each call and each composite literal whose
// arguments name a document (a string, or a constant of one, that is the document's path from
// the file's directory), and takes the other strings among those arguments as what selects
// a block: a marker of the document followed by the block (of the call's language, its last
// argument, when it gives one), or a text that only that block contains. A block no test
// selects so fails here, so that a new snippet in README or a guide cannot go untested.
func TestDocBlocksAreTested(t *testing.T) {
	type use struct {
		file, doc  string
		selectors  []string
		lang       string // "any" when the call gives none: then the first block after a marker
		containing bool   // a call of Containing: the block that contains the text
	}
	docs := guides(t)
	isDoc := map[string]bool{}
	for _, d := range docs {
		isDoc[d] = true
	}
	langs := map[string]bool{"": true, "go": true, "sh": true, "yaml": true}
	var uses []use
	for _, f := range repositoryFiles(t) {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		// The file's named strings: const marker = "...".
		named := map[string]string{}
		ast.Inspect(parsed, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				for i, name := range spec.Names {
					if i < len(spec.Values) {
						if s, ok := stringOf(spec.Values[i], nil); ok {
							named[name.Name] = s
						}
					}
				}
			}
			return true
		})
		collect := func(args []ast.Expr, containing bool) {
			var doc string
			var strs []string
			for _, a := range args {
				if kv, ok := a.(*ast.KeyValueExpr); ok {
					a = kv.Value
				}
				s, ok := stringOf(a, named)
				if !ok {
					continue
				}
				if p := path.Clean(path.Join(path.Dir(f), s)); strings.HasSuffix(s, ".md") && isDoc[p] {
					doc = p
					continue
				}
				strs = append(strs, s)
			}
			if doc == "" || len(strs) == 0 {
				return
			}
			u := use{file: f, doc: doc, lang: "any", containing: containing}
			if last := strs[len(strs)-1]; langs[last] && len(strs) > 1 {
				u.lang, strs = last, strs[:len(strs)-1]
			}
			u.selectors = strs
			uses = append(uses, u)
		}
		ast.Inspect(parsed, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				collect(n.Args, name == "Containing")
			case *ast.CompositeLit:
				collect(n.Elts, false)
			}
			return true
		})
	}
	total := 0
	for _, d := range docs {
		text := rootFile(t, d)
		blocks := fencedBlocks(d, text)
		total += len(blocks)
		claimed := make([]string, len(blocks))
		claim := func(k int, u use, s string) {
			if claimed[k] == "" {
				claimed[k] = u.file + " (" + strconv.Quote(s) + ")"
			}
		}
		for _, u := range uses {
			if u.doc != d {
				continue
			}
			for _, s := range u.selectors {
				if u.containing { // the one block of the language that holds the text
					holder := -1
					for k, b := range blocks {
						if strings.Contains(b.body, s) && (u.lang == "any" || u.lang == b.lang) {
							if holder != -1 {
								holder = -2
								break
							}
							holder = k
						}
					}
					if holder >= 0 {
						claim(holder, u, s)
					}
					continue
				}
				// Block: the first fence of the language after the marker opens the block.
				i := strings.Index(text, s)
				if i < 0 {
					continue
				}
				if u.lang == "any" { // the first block after the marker
					for k, b := range blocks {
						if b.fence >= i+len(s) {
							claim(k, u, s)
							break
						}
					}
					continue
				}
				j := strings.Index(text[i+len(s):], "```"+u.lang+"\n")
				for k, b := range blocks {
					if j >= 0 && b.fence == i+len(s)+j && b.lang == u.lang {
						claim(k, u, s)
					}
				}
			}
		}
		for k, b := range blocks {
			if testing.Verbose() && claimed[k] != "" {
				t.Logf("%s:%d: read by %s", d, b.line, claimed[k])
			}
			if claimed[k] == "" {
				first, _, _ := strings.Cut(strings.TrimSpace(b.body), "\n")
				t.Errorf("%s:%d: a ```%s block that no test reads as written: %s", d, b.line, b.lang, first)
			}
		}
	}
	if total < 40 {
		t.Errorf("%d code blocks in README and the guides; the parser of fences is broken", total)
	}
}

// stringOf returns the string an expression is: a string literal, or the name of one of the
// file's named strings.
func stringOf(e ast.Expr, named map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := named[e.Name]
		return s, ok
	}
	return "", false
}

// The developer commands of README's Tests, docs/development.md and docs/performance.md, as
// written: each make line names a target of the Makefile (and only variables the Makefile
// reads), each go run a command of the repository, each (cd DIR && go test -bench …) a
// directory with benchmarks, each (cd DIR && ENV=1 go test -count=1 -run '^TestX$' .) a
// test of DIR that runs only with ENV=1, and every directory a line's comment names has
// benchmarks; and CI
// (.ci/run) runs README's test command.
func TestDocCommandLines(t *testing.T) {
	makefile := rootFile(t, "Makefile")
	hasBenchmarks := func(dir string) bool {
		tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, f := range tests {
			if strings.Contains(rootFile(t, f), "\nfunc Benchmark") {
				return true
			}
		}
		return false
	}
	makeLine := regexp.MustCompile(`^((?:[A-Z_]+=\S+ )*)make ([a-z-]+)((?: [A-Z_]+=\S+)*)$`)
	goRun := regexp.MustCompile(`^go run (\./\S+)$`)
	cdBench := regexp.MustCompile(`^\(cd (\S+) && go test -run '\^\$' -bench \. -benchmem\)$`)
	optIn := regexp.MustCompile(`^\(cd (\S+) && ([A-Z][A-Z_]+)=1 go test -count=1 -run '\^(Test\w+)\$' \.\)$`)
	// optedIn reports whether a test file of dir declares test and skips it unless env is 1.
	optedIn := func(dir, test, env string) bool {
		tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, f := range tests {
			src := rootFile(t, f)
			if i := strings.Index(src, "\nfunc "+test+"(t *testing.T) {\n"); i >= 0 && strings.Contains(src[i:], `os.Getenv("`+env+`") != "1"`) {
				return true
			}
		}
		return false
	}
	named := regexp.MustCompile(`\badapters/\w+`)
	lines := 0
	for _, c := range []struct{ doc, marker string }{
		{"README.md", "## Tests"},
		{"docs/development.md", "# Development"},
		{"docs/performance.md", "# Performance"},
	} {
		for line := range strings.SplitSeq(strings.TrimSpace(readmetest.Block(t, c.doc, c.marker, "sh")), "\n") {
			lines++
			cmd, comment, _ := strings.Cut(line, "#")
			cmd = strings.TrimSpace(cmd)
			vars := regexp.MustCompile(`\b([A-Z][A-Z_]+)=`).FindAllStringSubmatch(line, -1)
			switch m := makeLine.FindStringSubmatch(cmd); {
			case m != nil:
				if !regexp.MustCompile(`(?m)^` + m[2] + `:`).MatchString(makefile) {
					t.Errorf("%s: %q: the Makefile has no target %s", c.doc, line, m[2])
				}
				for _, v := range vars {
					if !strings.Contains(makefile, "$("+v[1]+")") {
						t.Errorf("%s: %q: the Makefile does not read %s", c.doc, line, v[1])
					}
				}
			case goRun.MatchString(cmd):
				dir := goRun.FindStringSubmatch(cmd)[1]
				if main, err := os.ReadFile(filepath.Join(dir, "main.go")); err != nil || !strings.HasPrefix(string(main), "// ") || !regexp.MustCompile(`(?m)^package main$`).Match(main) {
					t.Errorf("%s: %q: %s is no command of the repository (%v)", c.doc, line, dir, err)
				}
			case cdBench.MatchString(cmd):
				if dir := cdBench.FindStringSubmatch(cmd)[1]; !hasBenchmarks(dir) {
					t.Errorf("%s: %q: %s has no benchmarks", c.doc, line, dir)
				}
			case optIn.MatchString(cmd):
				if m := optIn.FindStringSubmatch(cmd); !optedIn(m[1], m[3], m[2]) {
					t.Errorf("%s: %q: %s has no %s that runs only with %s=1", c.doc, line, m[1], m[3], m[2])
				}
			default:
				t.Errorf("%s: %q is no command this test knows", c.doc, line)
			}
			for _, dir := range named.FindAllString(comment, -1) {
				if !hasBenchmarks(dir) {
					t.Errorf("%s: %q names %s, which has no benchmarks", c.doc, line, dir)
				}
			}
		}
	}
	if readme := strings.TrimSpace(readmetest.Block(t, "README.md", "## Tests", "sh")); !regexp.MustCompile(`(?m)^(?:time )?` + regexp.QuoteMeta(readme) + `$`).MatchString(rootFile(t, ".ci/run")) {
		t.Errorf(".ci/run does not run README's test command, %q", readme)
	}
	if lines < 8 {
		t.Errorf("%d command lines; want README's, development's and performance's", lines)
	}
}

// Every relative link of README, the guides, ARCHITECTURE.md and CHANGELOG.md reaches a file
// of the repository, and a link to a heading (path#anchor, or #anchor within the document)
// names a heading the target has, as GitHub makes its anchors: a section moved to a guide
// leaves no link behind.
func TestDocLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile(`(?m)^#+ (.+)$`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(doc string) map[string]bool {
		if a, ok := anchors[doc]; ok {
			return a
		}
		a := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(rootFile(t, doc), -1) {
			slug := strings.Map(func(r rune) rune {
				switch {
				case r == ' ':
					return '-'
				case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
					return unicode.ToLower(r)
				}
				return -1
			}, m[1])
			a[slug] = true
		}
		anchors[doc] = a
		return a
	}
	links := 0
	for _, doc := range documents(t) {
		text := rootFile(t, doc)
		for _, b := range fencedBlocks(doc, text) { // code is no link
			text = strings.Replace(text, b.body, "", 1)
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file := doc
			if target != "" {
				file = path.Clean(path.Join(path.Dir(doc), target))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s, which the repository does not have", doc, m[1])
					continue
				}
			}
			if anchor != "" && (!strings.HasSuffix(file, ".md") || !anchorsOf(file)[anchor]) {
				t.Errorf("%s links to %s: %s has no heading #%s", doc, m[1], file, anchor)
			}
		}
	}
	if links < 50 {
		t.Errorf("%d relative links in the documents; the link parser is broken", links)
	}
}

// README is a front door: at most 400 lines, from which every guide under docs/ is reached by
// its links (a link, or a guide's path named in the text, followed from guide to guide).
func TestReadmeIsAFrontDoor(t *testing.T) {
	readme := rootFile(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 400 {
		t.Errorf("README.md has %d lines; a front door has at most 400: move a section to a guide", n)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)`)
	mention := regexp.MustCompile(`(?:^|[^\w/])(docs/[\w./-]+\.md)`)
	seen, todo := map[string]bool{}, []string{"README.md"}
	for len(todo) > 0 {
		doc := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[doc] || !fileExists(doc) {
			continue
		}
		seen[doc] = true
		text := rootFile(t, doc)
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			if p := path.Clean(path.Join(path.Dir(doc), m[1])); strings.HasSuffix(p, ".md") && !strings.Contains(m[1], "://") {
				todo = append(todo, p)
			}
		}
		for _, m := range mention.FindAllStringSubmatch(text, -1) {
			todo = append(todo, m[1])
		}
	}
	all, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if !seen[filepath.ToSlash(d)] {
			t.Errorf("%s is reached by no link from README.md", d)
		}
	}
}
