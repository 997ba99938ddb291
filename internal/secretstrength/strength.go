// Package secretstrength refuses secrets that can be guessed offline.
//
// A signing secret of bazinga (the webhook secret, the state key) is checked
// against data an attacker may hold — a signed delivery, a signed state
// block and its public key — so a guess can be tested offline at billions
// per second, and only a secret with the strength of a random 128-bit key
// holds. The checks are conservative estimates, not a proof of randomness:
// they refuse what is short, repetitive, sequential or made of common
// words, and accept what `openssl rand -hex 32` or `openssl rand -base64 32`
// prints.
package secretstrength

import (
	"fmt"
	"math"
	"strings"
)

// Advice says how to make a good secret; refusals end with it.
const Advice = "make one with `openssl rand -hex 32` (32 random bytes, 64 hex characters)"

// MinLength is the shortest secret accepted: 32 hex characters are 128 bits.
const MinLength = 32

// MinBits is the least estimated strength, in bits.
const MinBits = 128

// minShannon is the least entropy per character a secret may show.
const minShannon = 2.5

// Check returns nil for a secret strong enough to sign with, or an error
// saying what is wrong (never quoting the secret).
func Check(secret string) error {
	s := strings.TrimSpace(secret)
	if len(s) < MinLength {
		return fmt.Errorf("too short (%d characters, at least %d)", len(s), MinLength)
	}
	// What is left once common words are taken out must be strong by
	// itself: a dictionary attack tries the words for free.
	if w, rest, n := withoutCommonWords(s); w != "" && bitsOf(rest)+float64(n*bitsPerWord) < MinBits {
		return fmt.Errorf("made of common words (%q…) and too little else: guessable from a dictionary", w)
	}
	if sequential(s) {
		return fmt.Errorf("mostly a run of neighbouring characters (like abcdef or 123456)")
	}
	if p := period(s); p > 0 {
		return fmt.Errorf("too repetitive (it repeats itself every %d characters)", p)
	}
	// Shannon entropy of the characters as they occur: repetition and a
	// tiny alphabet show up here whatever the length. Measured on a short
	// sample it is noisy: 32 random hex characters (16 bytes) fall below
	// 3 bits once in ten thousand and below 2.8 twice in a million, so the
	// floor sits below what randomness produces.
	h := shannon(s)
	if h < minShannon {
		return fmt.Errorf("too repetitive (%.1f bits per character, at least %.1f)", h, minShannon)
	}
	if bits := bitsOf(s); bits < MinBits {
		return fmt.Errorf("too little entropy (about %.0f bits, at least %d)", bits, MinBits)
	}
	return nil
}

// bitsOf estimates the strength of s: its length times the bits of its
// alphabet (an upper bound for random text; the other checks catch what
// is not random).
func bitsOf(s string) float64 {
	if s == "" {
		return 0
	}
	return float64(len(s)) * math.Log2(float64(alphabet(s)))
}

// period returns the smallest p (up to half the length) for which at least
// half of the characters equal the one p further on, or 0.
func period(s string) int {
	for p := 1; p <= len(s)/2; p++ {
		same := 0
		for i := 0; i+p < len(s); i++ {
			if s[i] == s[i+p] {
				same++
			}
		}
		if same*2 >= len(s)-p {
			return p
		}
	}
	return 0
}

// alphabet is the size of the smallest usual alphabet s is written in: hex,
// digits, one case of letters with digits, both cases with digits, or
// printable ASCII.
func alphabet(s string) int {
	var lower, upper, digit, hexOnly, other = false, false, false, true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			lower = true
			hexOnly = hexOnly && c <= 'f'
		case c >= 'A' && c <= 'Z':
			upper = true
			hexOnly = hexOnly && c <= 'F'
		default:
			other = true
		}
	}
	switch {
	case other:
		return 94
	case hexOnly && !(lower && upper):
		return 16
	case lower && upper:
		return 62
	case lower || upper:
		return 26 + map[bool]int{true: 10}[digit]
	default:
		return 10
	}
}

func shannon(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// sequential reports whether more than half of the adjacent pairs differ by
// -1, 0 or +1 (keyboard and alphabet runs, repeats).
func sequential(s string) bool {
	near := 0
	for i := 1; i < len(s); i++ {
		if d := int(s[i]) - int(s[i-1]); d >= -1 && d <= 1 {
			near++
		}
	}
	return near*2 > len(s)-1
}

// words are what people type when asked for a secret: the words of common
// password lists, and the names around bazinga. Matching is on lower case,
// so case variations of them are caught too.
var words = []string{
	"password", "passw0rd", "secret", "s3cret", "development", "develop", "production", "staging", "testing", "test",
	"hunter", "admin", "administrator", "letmein", "welcome", "qwerty", "azerty", "asdf", "zxcv", "iloveyou",
	"monkey", "dragon", "master", "shadow", "sunshine", "princess", "football", "baseball", "superman", "batman",
	"trustno1", "changeme", "change", "default", "example", "sample", "webhook", "github", "bazinga", "token",
	"state", "signing", "private", "public", "key", "hello", "world", "login", "root", "user", "guest", "pass",
	"abc", "xyz", "foo", "bar", "baz", "qux", "dummy", "local", "localhost", "demo", "temp", "temporary",
	"the", "and", "not", "very", "super", "long", "strong", "random", "string", "value", "app", "bot", "action", "only",
	"correct", "horse", "battery", "staple", "summer", "winter", "spring", "autumn", "company", "server",
}

// bitsPerWord is what a common word adds to a dictionary guess: which of
// the ~100 words, where, in which case.
const bitsPerWord = 12

// withoutCommonWords returns the longest common word found in s (case
// folded), s with every occurrence of the words and the separators people
// put between them taken out, and the number of occurrences.
func withoutCommonWords(s string) (string, string, int) {
	low := strings.ToLower(s)
	covered := make([]bool, len(low))
	longest, found := "", 0
	for _, w := range words {
		for i := 0; ; {
			j := strings.Index(low[i:], w)
			if j < 0 {
				break
			}
			for k := i + j; k < i+j+len(w); k++ {
				covered[k] = true
			}
			if len(w) > len(longest) {
				longest = w
			}
			found++
			i += j + 1
		}
	}
	if longest == "" {
		return "", s, 0
	}
	var rest strings.Builder
	for i, c := range covered {
		if !c && strings.IndexByte("-_. ", low[i]) < 0 {
			rest.WriteByte(s[i])
		}
	}
	return longest, rest.String(), found
}
