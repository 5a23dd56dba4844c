// Package forwarded parses the Forwarded header of RFC 7239: the elements a chain of proxies
// wrote, and the node of a for= parameter, the address of the client each proxy saw.
package forwarded

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Element is one element of a Forwarded header (RFC 7239 §4): what one proxy saw.
// Values are unquoted; a parameter that is absent is "".
type Element struct {
	For, By, Host, Proto string
}

// maxElements bounds the elements of one Forwarded header; no real chain of proxies
// comes near it.
const maxElements = 64

// Parse parses a Forwarded header value:
//
//	Forwarded         = 1#forwarded-element
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
//
// Parameter names are case-insensitive; parameters other than for, by, host and proto are
// skipped; a parameter repeated in one element is an error (RFC 7239 §4). Whitespace is
// allowed around ',' and ';'; empty list elements are skipped (RFC 9110 §5.6.1).
func Parse(v string) ([]Element, error) {
	p := parser{s: v}
	var elems []Element
	for {
		p.skipSpace()
		if p.done() {
			return elems, nil
		}
		if p.peek() == ',' {
			p.i++
			continue
		}
		e, err := p.element()
		if err != nil {
			return nil, err
		}
		if e != (Element{}) {
			if len(elems) == maxElements {
				return nil, fmt.Errorf("Forwarded has more than %d elements", maxElements)
			}
			elems = append(elems, e)
		}
	}
}

type parser struct {
	s string
	i int
}

func (p *parser) done() bool { return p.i >= len(p.s) }
func (p *parser) peek() byte { return p.s[p.i] }

func (p *parser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("Forwarded: at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// element parses pairs up to the next ',' outside quotes, or the end.
func (p *parser) element() (Element, error) {
	var e Element
	for {
		p.skipSpace()
		if p.done() || p.peek() == ',' {
			return e, nil
		}
		if p.peek() == ';' {
			p.i++
			continue
		}
		name := p.token()
		if name == "" {
			return e, p.errorf("want a parameter name, found %q", p.s[p.i])
		}
		if p.done() || p.peek() != '=' {
			return e, p.errorf("want '=' after parameter %q", clip(name))
		}
		p.i++
		value, err := p.value()
		if err != nil {
			return e, err
		}
		var field *string
		switch strings.ToLower(name) {
		case "for":
			field = &e.For
		case "by":
			field = &e.By
		case "host":
			field = &e.Host
		case "proto":
			field = &e.Proto
		}
		if field != nil {
			if *field != "" {
				return e, p.errorf("parameter %q appears twice in one element", strings.ToLower(name))
			}
			if value == "" {
				return e, p.errorf("parameter %q is empty", strings.ToLower(name))
			}
			*field = value
		}
		p.skipSpace()
		if !p.done() && p.peek() != ';' && p.peek() != ',' {
			return e, p.errorf("want ';' or ',' after a parameter, found %q", p.s[p.i])
		}
	}
}

// token reads 1*tchar, or returns "".
func (p *parser) token() string {
	start := p.i
	for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// value reads a token or a quoted-string, returning it unquoted.
func (p *parser) value() (string, error) {
	if p.done() || p.peek() != '"' {
		v := p.token()
		if v == "" {
			return "", p.errorf("want a value")
		}
		return v, nil
	}
	p.i++ // opening quote
	start, escaped := p.i, false
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			raw := p.s[start:p.i]
			p.i++
			if escaped {
				return unescapeQuoted(raw), nil
			}
			return raw, nil
		case c == '\\':
			p.i++
			if p.i == len(p.s) {
				return "", p.errorf("unterminated quoted string")
			}
			if c := p.s[p.i]; c < ' ' && c != '\t' || c == 0x7f {
				return "", p.errorf("control character in a quoted string")
			}
			escaped = true
		case c < ' ' && c != '\t' || c == 0x7f:
			return "", p.errorf("control character in a quoted string")
		}
	}
	return "", p.errorf("unterminated quoted string")
}

// unescapeQuoted removes the backslashes of quoted-pairs from the inside of a valid
// quoted-string.
func unescapeQuoted(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' {
			i++
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

// ErrUndisclosed is returned for a for= node that hides the address: "unknown" or an
// obfuscated identifier (RFC 7239 §6).
var ErrUndisclosed = errors.New("does not disclose the client address")

// ParseNode parses the node of a for= parameter (RFC 7239 §6):
//
//	node     = nodename [ ":" node-port ]
//	nodename = IPv4address / "[" IPv6address "]" / "unknown" / obfnode
//
// It accepts an unbracketed IPv6 address without a port as well.
func ParseNode(node string) (netip.Addr, error) {
	bad := func(err error) (netip.Addr, error) {
		return netip.Addr{}, fmt.Errorf("for=%q %w", clip(node), err)
	}
	name, port := node, ""
	bracketed := strings.HasPrefix(node, "[")
	if bracketed {
		end := strings.IndexByte(node, ']')
		if end < 0 {
			return bad(errors.New("has no closing ']'"))
		}
		name, port = node[1:end], node[end+1:]
		if port != "" {
			if port[0] != ':' {
				return bad(errors.New("has text after ']'"))
			}
			port = port[1:]
		}
	} else if strings.Count(node, ":") == 1 {
		name, port, _ = strings.Cut(node, ":")
	}
	if strings.EqualFold(name, "unknown") || strings.HasPrefix(name, "_") {
		return bad(ErrUndisclosed)
	}
	if !validNodePort(port) {
		return bad(errors.New("has an invalid port"))
	}
	a, err := netip.ParseAddr(name)
	if err != nil || bracketed && !a.Is6() {
		return bad(errors.New("is not an IP address"))
	}
	return a.WithZone("").Unmap(), nil
}

// validNodePort reports whether port is empty, 1 to 5 digits, or an obfuscated port.
func validNodePort(port string) bool {
	if port == "" {
		return true
	}
	if port[0] == '_' {
		for i := 1; i < len(port); i++ {
			c := port[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return len(port) > 1
	}
	if len(port) > 5 {
		return false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
