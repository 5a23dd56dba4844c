// Package rules reads rate limits from a rules document.
package rules
