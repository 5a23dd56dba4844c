package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDepth bounds how deeply a JSON document may nest. The schema needs five levels; the rest
// is room for values of unknown fields, which are reported, never read.
const maxDepth = 64

// jsonReader turns a JSON document into the same tree of yaml.Node as a YAML document, each
// node with the line and column where its token starts, so one schema reads both formats.
type jsonReader struct {
	data  []byte
	dec   *json.Decoder
	lines []int // the offset at which each line starts (lineStarts)
}

// syntaxError is a JSON document that cannot be read, at a byte offset.
type syntaxError struct {
	offset    int64
	line, col int // of offset, set by parseJSON
	msg       string
}

func (e *syntaxError) Error() string { return e.msg }

// parseJSON reads data as one JSON value.
func parseJSON(data []byte) (*yaml.Node, *syntaxError) {
	j := &jsonReader{data: data, dec: json.NewDecoder(bytes.NewReader(data)), lines: lineStarts(data, false)}
	j.dec.UseNumber()
	n, err := j.document()
	if err != nil {
		var se *syntaxError
		if !errors.As(err, &se) {
			se = &syntaxError{msg: err.Error()}
		}
		se.line, se.col = j.position(se.offset)
		return nil, se
	}
	return n, nil
}

// document reads the one value of the document.
func (j *jsonReader) document() (*yaml.Node, error) {
	data := j.data
	n, err := j.value(0)
	if err != nil {
		return nil, err
	}
	end := j.dec.InputOffset()
	for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
		end++
	}
	if end < int64(len(data)) {
		return nil, &syntaxError{offset: end, msg: "data after the end of the document"}
	}
	return n, nil
}

// position returns the line and column, from 1, of a byte offset.
func (j *jsonReader) position(offset int64) (line, col int) {
	i := sort.Search(len(j.lines), func(i int) bool { return int64(j.lines[i]) > offset }) - 1
	return i + 1, int(offset) - j.lines[i] + 1
}

// next returns the offset where the next token starts: past the white space, colons and
// commas that the decoder has not consumed yet (it checks them when it reads the token).
func (j *jsonReader) next() int64 {
	off := j.dec.InputOffset()
	for off < int64(len(j.data)) && strings.IndexByte(" \t\r\n,:", j.data[off]) >= 0 {
		off++
	}
	return off
}

// token reads the next token, and where it starts.
func (j *jsonReader) token() (json.Token, int64, error) {
	start := j.next()
	t, err := j.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, start, &syntaxError{offset: se.Offset, msg: se.Error()}
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			end := len(j.data) // just past the last thing written, on its line
			for end > 0 && strings.IndexByte(" \t\r\n", j.data[end-1]) >= 0 {
				end--
			}
			return nil, start, &syntaxError{offset: int64(end), msg: "unexpected end of the document"}
		}
		return nil, start, &syntaxError{offset: start, msg: err.Error()}
	}
	return t, start, nil
}

// value reads one value and everything in it.
func (j *jsonReader) value(depth int) (*yaml.Node, error) {
	t, start, err := j.token()
	if err != nil {
		return nil, err
	}
	n := &yaml.Node{Kind: yaml.ScalarNode}
	n.Line, n.Column = j.position(start)
	switch t := t.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, &syntaxError{offset: start, msg: fmt.Sprintf("the document nests more than %d levels deep", maxDepth)}
		}
		if t == '{' {
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
		} else {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		for j.dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := j.value(depth + 1) // a string: the decoder allows nothing else here
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, k)
			}
			v, err := j.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, _, err := j.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.Tag, n.Value = "!!str", t
	case json.Number:
		n.Tag, n.Value = "!!int", string(t)
		if strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!float"
		}
	case bool:
		n.Tag, n.Value = "!!bool", fmt.Sprint(t)
	case nil:
		n.Tag, n.Value = "!!null", "null"
	}
	return n, nil
}
