package promql

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/grafana/regexp/syntax"
	"github.com/prometheus/prometheus/util/strutil"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// A regular expression matcher (=~, !~) is what Prometheus's parser pays
// most for in a query: it compiles every one (labels.NewFastRegexMatcher),
// and counted repetitions, Unicode classes and case-folded ranges expand as
// they compile. One matcher of 4,096 characters of ".{1000}" cost it a
// quarter of a second and 185 MB, and no operator or parenthesis showed it
// to the shape bound. So Check reads each matcher's regular expression
// itself, bounded before it parses it, and hands Prometheus's parser a
// cheap stand-in of the same length, which keeps the parser's positions
// and everything the parser decides on the regular expression: whether it
// matches the empty string.
const (
	// maxRegexes bounds the regular expression matchers of a query.
	maxRegexes = 16
	// maxRegexLength bounds the characters of a query's regular
	// expressions, but for alternatives of literals (a|b|c), which
	// Prometheus matches without parsing them: Go's parser allocates
	// about 230 bytes for each character of ".*a.*a...", and ten queries
	// of 4,096 such characters took a spec's first run to 9 MB.
	maxRegexLength = 1024
	// maxUnicodeClasses bounds the \p and \P classes of a query's regular
	// expressions: Go's parser copies each class's table, 13 KB for \pL,
	// three times that folded for case.
	maxUnicodeClasses = 8
	// maxFoldedRunes bounds the characters that case folding walks in the
	// ranges of a query's bracket classes: Go's parser folds a range one
	// character at a time, 2 ms for (?i)[\x{42}-\x{1E942}].
	maxFoldedRunes = 4096
	// maxRegexProgram bounds the instructions that a query's regular
	// expressions compile to, a counted repetition copying what it
	// repeats: the provider compiles them on every query, and 585 of
	// ".{1000}" cost it 185 MB each time.
	maxRegexProgram = 1 << 16

	// minFold and maxFold are the characters that case folding can change
	// (the syntax package's own bounds): a range that covers them all, or none,
	// costs nothing to fold.
	minFold = 0x0041
	maxFold = 0x1e943
)

const (
	errFmtTooManyRegexes = "query has more than %d regular expression matchers (=~, !~) at byte %d"
	errFmtRegex          = "the regular expression at byte %d: %s"
	errFmtRegexLength    = "the regular expression at byte %d: the query's regular expressions are longer than %d characters (alternatives of plain text, such as a|b|c, are not counted)"
	errFmtUnicodeClasses = "the regular expression at byte %d: the query's regular expressions hold more than %d Unicode classes (\\p, \\P)"
	errFmtFoldedRunes    = "the regular expression at byte %d: the query's case-insensitive character classes span more than %d characters"
	errFmtRegexProgram   = "the regular expression at byte %d: the query's regular expressions expand to more than %d instructions (a counted repetition {n,m} copies what it repeats)"
)

// metacharacters are those of regexp.QuoteMeta but |: an expression
// without any is literals, or alternatives of them.
const metacharacters = `\.+*?()[]{}^$`

// span is where a regular expression matcher's string literal stands in a
// query, its quotes included: [start, end).
type span struct{ start, end int }

// regexCost is what a query's regular expressions cost so far, as Check
// reads them one after the other.
type regexCost struct {
	length         int
	unicodeClasses int
	foldedRunes    int
	program        int
}

// standIns checks the regular expression of each matcher of a query, whose
// string literals stand at spans of text (the query with its placeholders
// replaced by samples), and returns text with each replaced by a stand-in
// that Prometheus's parser compiles in no time. A literal that does not
// unquote is left as it is: the parser refuses it, and compiles nothing of
// it.
func standIns(text string, spans []span) (string, error) {
	if len(spans) == 0 {
		return text, nil
	}
	out := []byte(text)
	var cost regexCost
	for _, s := range spans {
		re, err := strutil.Unquote(text[s.start:s.end])
		if err != nil {
			continue
		}
		empty, err := cost.check(re, s.start)
		if err != nil {
			return "", err
		}
		copy(out[s.start+1:s.end-1], standIn(s.end-s.start-2, empty))
	}
	return string(out), nil
}

// check checks the regular expression of a matcher whose literal stands at
// byte at as Prometheus's parser would (labels.NewFastRegexMatcher:
// grafana/regexp's syntax, Perl's, "." matching a new line; alternatives
// of literals taken as they are), and adds what it costs to c. It bounds what
// parsing costs before it parses, then what the provider's compiling
// would. It reports whether the regular expression matches the empty
// string, which the parser asks of a selector's matchers.
func (c *regexCost) check(re string, at int) (bool, error) {
	if !strings.ContainsAny(re, metacharacters) {
		// Literals and alternatives of literals, Prometheus matches
		// without parsing them: whatever their bytes, even not UTF-8.
		c.program += len(re)
		if c.program > maxRegexProgram {
			return false, errors.Errorf(errFmtRegexProgram, at, maxRegexProgram)
		}
		return re == "" || strings.HasPrefix(re, "|") || strings.HasSuffix(re, "|") || strings.Contains(re, "||"), nil
	}
	c.length += utf8.RuneCountInString(re)
	if c.length > maxRegexLength {
		return false, errors.Errorf(errFmtRegexLength, at, maxRegexLength)
	}
	if err := c.read(re, at); err != nil {
		return false, err
	}
	parsed, err := syntax.Parse(re, syntax.Perl|syntax.DotNL)
	if err != nil {
		return false, errors.Wrap(errors.Errorf(errFmtRegex, at, fielderr.Cut(err.Error(), fielderr.MaxValue)), errDoesNotParse)
	}
	c.program += programSize(parsed)
	if c.program > maxRegexProgram {
		return false, errors.Errorf(errFmtRegexProgram, at, maxRegexProgram)
	}
	return matchesEmpty(parsed), nil
}

// read reads a regular expression as the syntax package would, only as far as
// what parsing it costs: its Unicode classes, and the ranges of its
// bracket classes once case folding may be on. It errs on the side of
// cost: folding, once a flag group turns it on, stays on to the end.
// Whether the expression is valid is the parser's business.
func (c *regexCost) read(re string, at int) error {
	fold := false
	for i := 0; i < len(re); {
		switch {
		case strings.HasPrefix(re[i:], `\Q`):
			// Literal text up to \E, or to the end.
			end := strings.Index(re[i+2:], `\E`)
			if end < 0 {
				return nil
			}
			i += 2 + end + 2
		case strings.HasPrefix(re[i:], `\p`), strings.HasPrefix(re[i:], `\P`):
			if err := c.unicodeClass(at); err != nil {
				return err
			}
			i = afterUnicodeClass(re, i)
		case re[i] == '\\':
			_, i = classChar(re, i)
		case re[i] == '[':
			var err error
			if i, err = c.class(re, i, fold, at); err != nil {
				return err
			}
		case strings.HasPrefix(re[i:], "(?"):
			fold = fold || foldsCase(re[i+2:])
			i += 2
		default:
			i++
		}
	}
	return nil
}

// unicodeClass counts a \p or \P class.
func (c *regexCost) unicodeClass(at int) error {
	c.unicodeClasses++
	if c.unicodeClasses > maxUnicodeClasses {
		return errors.Errorf(errFmtUnicodeClasses, at, maxUnicodeClasses)
	}
	return nil
}

// class reads the bracket class that opens at byte i of re, as the syntax
// package's parseClass does, and returns the byte after it.
func (c *regexCost) class(re string, i int, fold bool, at int) (int, error) {
	j := i + 1
	if j < len(re) && re[j] == '^' {
		j++
	}
	// "]" and "-" are characters of the class when they come first.
	for first := true; j < len(re) && (re[j] != ']' || first); first = false {
		if strings.HasPrefix(re[j:], "[:") {
			// A POSIX class, [:alpha:], is ASCII: cheap.
			if end := strings.Index(re[j+2:], ":]"); end >= 0 {
				j += 2 + end + 2
				continue
			}
		}
		if strings.HasPrefix(re[j:], `\p`) || strings.HasPrefix(re[j:], `\P`) {
			if err := c.unicodeClass(at); err != nil {
				return 0, err
			}
			j = afterUnicodeClass(re, j)
			continue
		}
		if len(re) > j+1 && re[j] == '\\' && strings.IndexByte(`dDsSwW`, re[j+1]) >= 0 {
			// A Perl class, \d, is ASCII: cheap.
			j += 2
			continue
		}
		lo, next := classChar(re, j)
		hi := lo
		j = next
		// "a-]" is "a" and "-".
		if len(re) > j+1 && re[j] == '-' && re[j+1] != ']' {
			hi, j = classChar(re, j+1)
		}
		if fold {
			c.foldedRunes += foldedWidth(lo, hi)
			if c.foldedRunes > maxFoldedRunes {
				return 0, errors.Errorf(errFmtFoldedRunes, at, maxFoldedRunes)
			}
		}
	}
	return j + 1, nil
}

// foldedWidth is how many characters the syntax package walks one by one to fold
// the range lo-hi for case: none when the range covers every character that
// folds, or none of them.
func foldedWidth(lo, hi rune) int {
	if lo <= minFold && hi >= maxFold {
		return 0
	}
	lo, hi = max(lo, minFold), min(hi, maxFold)
	if hi < lo {
		return 0
	}
	return int(hi-lo) + 1
}

// foldsCase reports whether the flags that open a group ("i)", "is:",
// "-i)" after "(?") turn case folding on. Anything else after "(?" (a
// named group) folds nothing.
func foldsCase(s string) bool {
	end := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("imsU-", r) })
	if end < 0 || (s[end] != ':' && s[end] != ')') {
		return false
	}
	on, _, _ := strings.Cut(s[:end], "-")
	return strings.Contains(on, "i")
}

// afterUnicodeClass is the byte after the \p or \P class at byte i of re:
// \pL, or \p{Greek}.
func afterUnicodeClass(re string, i int) int {
	j := i + 2
	if j >= len(re) {
		return len(re)
	}
	if re[j] == '{' {
		if end := strings.IndexByte(re[j:], '}'); end >= 0 {
			return j + end + 1
		}
		return len(re)
	}
	_, size := utf8.DecodeRuneInString(re[j:])
	return j + size
}

// classChar reads the character at byte i of re, escaped or not, as
// the syntax package's parseClassChar does: its value (what an invalid escape
// stands for is the parser's business) and the byte after it.
func classChar(re string, i int) (rune, int) {
	if re[i] != '\\' {
		r, size := utf8.DecodeRuneInString(re[i:])
		return r, i + size
	}
	if i+1 >= len(re) {
		return 0, len(re)
	}
	c, size := utf8.DecodeRuneInString(re[i+1:])
	j := i + 1 + size
	switch {
	case c >= '0' && c <= '7':
		// Up to three octal digits.
		r := c - '0'
		for k := 0; k < 2 && j < len(re) && re[j] >= '0' && re[j] <= '7'; k++ {
			r = r*8 + rune(re[j]-'0')
			j++
		}
		return r, j
	case c == 'x' && j < len(re) && re[j] == '{':
		end := strings.IndexByte(re[j:], '}')
		if end < 0 {
			return 0, len(re)
		}
		return hexRune(re[j+1 : j+end]), j + end + 1
	case c == 'x':
		end := min(j+2, len(re))
		return hexRune(re[j:end]), end
	}
	if r, ok := cEscapes[c]; ok {
		return r, j
	}
	return c, j
}

// cEscapes are the C escapes the syntax package reads.
var cEscapes = map[rune]rune{'a': '\a', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// hexRune is the character of hexadecimal digits, 0 for none or too many.
func hexRune(digits string) rune {
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || v > unicode.MaxRune {
		return 0
	}
	return rune(v)
}

// programSize is about how many instructions Go's regexp compiles re to: a
// counted repetition copies what it repeats (x{2,} twice, and a star). It
// stops counting past maxRegexProgram.
func programSize(re *syntax.Regexp) int {
	const most = maxRegexProgram + 1
	sum := 1
	for _, sub := range re.Sub {
		sum = min(sum+programSize(sub), most)
	}
	switch re.Op {
	case syntax.OpLiteral:
		return max(len(re.Rune), 1)
	case syntax.OpRepeat:
		copies := re.Max
		if copies < 0 {
			copies = re.Min + 1
		}
		return min(copies*(sum-1)+1, most)
	default:
		return sum
	}
}

// matchesEmpty reports whether re matches the empty string. On it every
// position is the start and the end of the text and of a line, and no
// word's boundary: every assertion is decided, and nothing that consumes a
// character matches.
func matchesEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCapture, syntax.OpPlus:
		return matchesEmpty(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || matchesEmpty(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !matchesEmpty(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if matchesEmpty(sub) {
				return true
			}
		}
		return false
	default:
		// No match, a class, any character, a word boundary.
		return false
	}
}

// standIn is a regular expression of n bytes, none of which a string
// literal escapes, that matches the empty string when empty says so and
// costs Prometheus's parser next to nothing: a literal, or an empty
// alternative and a literal.
func standIn(n int, empty bool) string {
	switch {
	case n == 0:
		return ""
	case empty:
		return "|" + strings.Repeat("a", n-1)
	default:
		return strings.Repeat("a", n)
	}
}
