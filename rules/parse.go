package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"go.yaml.in/yaml/v3"
)

// Bounds on what one file can make [Parse] hold.
const (
	// MaxFileSize is the largest file Parse reads, in bytes: 1 MiB.
	MaxFileSize = 1 << 20
	// MaxRules is the most rules a file may hold.
	MaxRules = 10_000
)

// More bounds, documented in the package overview.
const (
	maxPolicies = 32  // policies of one rule
	maxKeyParts = 8   // parts of one rule's key
	maxErrors   = 100 // problems reported at most; then one more says there are others
	maxLabel    = 128 // bytes of a version or a tier
)

// The options of this package are of three kinds, each accepted where it applies, so that an
// option given to a function it does not concern does not compile:
//
//   - a [ParseOption] concerns reading a document: [Parse], [Push], [PushWith], [Fetch], and an
//     engine's watchers, so every constructor of an [Engine] takes it too;
//   - an [Option] concerns an [Engine]: [NewEngine], [Open] and [OpenRedis] take it;
//   - a [StartOption] concerns only how [OpenRedis] starts while Redis is down.
//
// An option given twice is refused, with an error naming it, since the second would silently
// replace the first; [WithGuardOptions] alone adds up, each call adding its options.

// StartOption configures [OpenRedis]: an [Option], [WithDefaultRules] or [WithStartTimeout].
type StartOption interface{ applyStart(*options) }

// Option configures an [Engine] ([NewEngine], [Open], [OpenRedis]) and its watchers.
type Option interface {
	StartOption
	applyEngine(*options)
}

// ParseOption configures how documents are read: by [Parse], [Push], [PushWith] and [Fetch],
// and by an engine's watchers.
type ParseOption interface {
	Option
	applyParse(*options)
}

// The three kinds of option, each a function of the options.
type (
	startOption  func(*options)
	engineOption func(*options)
	parseOption  func(*options)
)

func (f startOption) applyStart(o *options)   { f(o) }
func (f engineOption) applyStart(o *options)  { f(o) }
func (f engineOption) applyEngine(o *options) { f(o) }
func (f parseOption) applyStart(o *options)   { f(o) }
func (f parseOption) applyEngine(o *options)  { f(o) }
func (f parseOption) applyParse(o *options)   { f(o) }

type options struct {
	userKey any // the key KeyByUser reads; nil: the key "user" is refused

	// An Engine's
	tier      func(ratelimit.Request) string
	guard     []ratelimit.Option
	response  *ratelimit.Response // WithResponse; nil: the default
	logger    *slog.Logger
	reporter  Reporter
	poll      time.Duration // how often a watcher reads its source without being told; 0: its default
	noNotify  bool          // a file watcher polls only (tests of the fallback)
	started   func()        // called by a watcher once it watches (tests)
	instance  string        // WithInstanceName; "": the default
	heartbeat time.Duration // WithHeartbeat; 0: DefaultHeartbeat

	lastGood     string        // WithLastKnownGood
	defaultName  string        // WithDefaultRules
	defaultDoc   []byte        // WithDefaultRules; nil: none
	startTimeout time.Duration // WithStartTimeout; 0: DefaultStartTimeout

	given, twice []string // the names of the options given, and of those given twice
}

// once records that the option name was given (see twiceErr).
func (o *options) once(name string) {
	if slices.Contains(o.given, name) {
		o.twice = append(o.twice, name)
		return
	}
	o.given = append(o.given, name)
}

// twiceErr returns the error of the options given twice, or nil.
func (o *options) twiceErr() error {
	if len(o.twice) == 0 {
		return nil
	}
	return fmt.Errorf("rules: %s given twice: the second would silently replace the first; give it once", strings.Join(o.twice, ", "))
}

// collect applies opts, of any kind.
func collect[O StartOption](opts []O) options {
	var o options
	for _, opt := range opts {
		if StartOption(opt) != nil {
			opt.applyStart(&o)
		}
	}
	return o
}

// asOptions returns an option that sets every option to o's.
func asOptions(o options) ParseOption {
	return parseOption(func(p *options) { *p = o })
}

// WithUserKey makes the key "user" available to rules: it is ratelimit.KeyByUser(key), the
// authenticated user's id that the application's middleware stored under key before the rate
// limiter runs. Without this option (or with a nil key), a rule keyed by "user" is an error,
// since the file cannot name a Go value.
func WithUserKey(key any) ParseOption {
	return parseOption(func(o *options) { o.once("WithUserKey"); o.userKey = key })
}

// Parse reads a rules document and validates all of it. name is the file's name: it appears
// in every error and chooses the format, JSON for a name ending in ".json", YAML for ".yaml"
// and ".yml"; for any other name a document starting with '{' is JSON, else YAML.
//
// The error, when there is one, is [Errors]: every problem of the file, each with its line and
// field (up to 100 of them); or, before the file is read, one saying an option was given twice.
// A document whose rules are an empty list is one of those problems
// (errors.Is(err, [ErrEmptyRules])) unless it says allow_empty: true: it would stop limiting
// every request. A document without a version field is valid, its version a hash of its rules
// ([Set.Versioned] false), which [Push] refuses.
func Parse(name string, data []byte, opts ...ParseOption) (*Set, error) {
	return parse(name, data, collect(opts))
}

func parse(name string, data []byte, o options) (*Set, error) {
	if err := o.twiceErr(); err != nil {
		return nil, err
	}
	c := &checker{file: name, opts: o}
	if len(data) > MaxFileSize {
		c.add(nil, "", "the file is %d bytes; a rules file may be at most %d (1 MiB)", len(data), MaxFileSize)
		return nil, c.errors()
	}
	var root *yaml.Node
	if isJSON(name, data) {
		root = c.decodeJSON(data)
	} else {
		root = c.decodeYAML(data)
	}
	if root == nil {
		return nil, c.errors()
	}
	s := c.document(root)
	if err := c.errors(); err != nil {
		return nil, err
	}
	return s, nil
}

// utf8BOM may start a file written on Windows.
var utf8BOM = []byte("\xef\xbb\xbf")

func isJSON(name string, data []byte) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".json":
		return true
	case ".yaml", ".yml":
		return false
	}
	data = bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// decodeJSON returns the document's value, or nil after reporting why there is none.
func (c *checker) decodeJSON(data []byte) *yaml.Node {
	data = bytes.TrimPrefix(data, utf8BOM) // it holds no newline: the lines stay the same
	n, se := parseJSON(data)
	if se != nil {
		c.errs = append(c.errs, &Error{File: c.file, Line: se.line, Column: se.col, Msg: "JSON syntax: " + se.msg})
		return nil
	}
	return n
}

// yamlLine is how the YAML parser places a syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems of yaml.v3's parser (the scanner's are others). For
// them yaml.v3 v3.0.1 reports the line counted from 0, and no line for the first.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// yamlSyntax returns the line (0 if unknown) and message of a yaml.v3 error.
func yamlSyntax(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if yamlParserProblems[msg] {
		line++
	}
	return line, msg
}

// decodeYAML returns the document's value, or nil after reporting why there is none.
func (c *checker) decodeYAML(data []byte) (root *yaml.Node) {
	syntax := func(err error) {
		line, msg := yamlSyntax(err)
		line = min(line, len(lineStarts(data, true))) // the end of the file, not past it
		c.errs = append(c.errs, &Error{File: c.file, Line: line, Msg: "YAML syntax: " + msg})
	}
	defer func() {
		// The parser is not expected to panic; if it does on some input, that input is an
		// error of the file, not a crash of the program reading it.
		if r := recover(); r != nil {
			root = nil
			syntax(fmt.Errorf("the parser failed: %v", r))
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.add(nil, "", "the file is empty; want a mapping with rules")
		} else {
			syntax(err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		syntax(err)
		return nil
	default:
		c.add(&next, "", "a second YAML document; a rules file holds one")
		return nil
	}
	if len(doc.Content) == 0 {
		c.add(nil, "", "the file is empty; want a mapping with rules")
		return nil
	}
	return doc.Content[0]
}

// lineStarts returns the offset at which each line of data starts. A line ends at "\n",
// "\r\n" or "\r"; in YAML also at U+0085, U+2028 and U+2029, which are line breaks there too.
func lineStarts(data []byte, yaml bool) []int {
	lines := []int{0}
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\n', data[i] == '\r' && (i+1 == len(data) || data[i+1] != '\n'):
		case yaml && bytes.HasPrefix(data[i:], []byte("\u0085")):
			i++
		case yaml && (bytes.HasPrefix(data[i:], []byte("\u2028")) || bytes.HasPrefix(data[i:], []byte("\u2029"))):
			i += 2
		default:
			continue
		}
		lines = append(lines, i+1)
	}
	return lines
}

// checker collects the problems of one file as it reads it.
type checker struct {
	file     string
	opts     options
	errs     []*Error
	warnings []*Error        // what is valid but does nothing (see Set.Warnings)
	store    ratelimit.Store // see memoryStore
}

// add reports a problem of field at node n (at the value an alias stands for, which is where
// to fix it); a nil n is the whole file.
func (c *checker) add(n *yaml.Node, field, format string, args ...any) {
	c.addErr(n, field, nil, format, args...)
}

// addErr is add of a problem that is kind, for errors.Is: one of the package's errors.
func (c *checker) addErr(n *yaml.Node, field string, kind error, format string, args ...any) {
	e := &Error{File: c.file, Field: field, Msg: fmt.Sprintf(format, args...), kind: kind}
	if n = deref(n); n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	c.errs = append(c.errs, e)
}

// errors returns the problems in the order of their lines, at most maxErrors and a last one
// saying how many more there are; nil when there are none.
func (c *checker) errors() error {
	if len(c.errs) == 0 {
		return nil
	}
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := c.errs[i], c.errs[j]
		return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
	})
	errs := Errors(c.errs)
	if len(errs) > maxErrors {
		more := len(errs) - maxErrors
		errs = append(errs[:maxErrors:maxErrors], &Error{File: c.file, Msg: fmt.Sprintf("and %d more problems", more)})
	}
	return errs
}
