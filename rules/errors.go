package rules

import (
	"strconv"
	"strings"
)

// Error is one problem of a rules file, at its place in the file.
type Error struct {
	// File is the name given to [Parse].
	File string
	// Line and Column locate the problem, from 1; Line is 0 for a problem of the whole file
	// (it is too large, or the parser gave no place).
	Line, Column int
	// Field is the path of the field at fault, such as "rules[1].policies[0].window", or ""
	// for the document itself.
	Field string
	// Msg says what is wrong and, where it helps, what to write instead.
	Msg string

	kind error // what errors.Is finds: ErrEmptyRules for a document without rules; nil for most
}

// Unwrap returns the kind of problem for errors.Is, when it has one of the package's errors:
// [ErrEmptyRules] for a document without rules that does not say allow_empty: true.
func (e *Error) Unwrap() error { return e.kind }

// Error returns "file:line: field: message", the line and field left out when unknown:
//
//	limits.yaml:12: rules[1].policies[0].window: "1x" is not a duration (e.g. 1s, 1m30s, 1d)
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem [Parse] found in a file, in the order of their lines. It is the
// error Parse returns; get at the list with errors.As:
//
//	var errs rules.Errors
//	if errors.As(err, &errs) {
//		for _, e := range errs { ... e.Line, e.Field ... }
//	}
type Errors []*Error

// Error returns one problem a line.
func (errs Errors) Error() string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (errs Errors) Unwrap() []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}
