package promql

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
)

const (
	errFmtTooLong          = "query is %d characters, more than %d"
	errFmtUnclosed         = "%q at byte %d opens a placeholder that no %q closes"
	errFmtUnknown          = "unknown placeholder %s at byte %d; known: {{namespace}}, {{route}}, {{service}}, {{revision}}, {{interval}}"
	errFmtAfterBackslash   = "placeholder %s at byte %d follows a backslash, which would escape its value's first character"
	errFmtOutsideString    = "placeholder %s at byte %d is outside a string literal: its value is text, write it inside double quotes (such as revision=\"%s\")"
	errFmtInRawString      = "placeholder %s at byte %d is inside a backtick string, where no escape applies: write the string in double quotes"
	errFmtNotOneNumber     = "query gives a %s; it must give one number (an instant vector or a scalar)"
	errDoesNotParse        = "query is not PromQL"
	errCheckUnfinished     = "the query's check did not finish"
	errFmtTooManyOps       = "query has more than %d operators: Prometheus's parser takes milliseconds on each, and a run must not wait for it; split the query"
	errFmtChain            = "query chains more than %d operators in a row at byte %d"
	errFmtTooDeep          = "query nests parentheses more than %d deep at byte %d"
	errFmtTooManyLabels    = "%s(...) at byte %d lists more than %d labels: Prometheus's parser compares each label of on() or ignoring() with each of group_left() or group_right()"
	errFmtEmptyItem        = "query has an empty item in a list at byte %d (a comma after %q): Prometheus's parser records an error for each and goes on, at a cost nothing else bounds"
	errFmtTooManyCommas    = "query has more than %d commas: Prometheus's parser records an error for each item of a list it cannot read, and goes on; split the query"
	errFmtRangeChain       = "query applies more than %d ranges or subqueries in a row at byte %d: a subquery of a range is no PromQL, and Prometheus's parser pays for each level again"
	placeholderOpen        = "{{"
	placeholderClose       = "}}"
	maxPlaceholderNameScan = 64
)

// Placeholders a query may use, each replaced by its value for the side
// measured.
const (
	PlaceholderNamespace = "namespace"
	PlaceholderRoute     = "route"
	PlaceholderService   = "service"
	PlaceholderRevision  = "revision"
	PlaceholderInterval  = "interval"
)

// Values are what the placeholders stand for, for the side measured.
type Values struct {
	// Namespace is the measured side's namespace: the route's for a proxy
	// Service, the backend's own for a backendRef in another namespace.
	Namespace string
	// Route is the route's name.
	Route string
	// Service is the side's proxy Service or backend name.
	Service string
	// Revision is the side's revision.
	Revision string
	// Interval is the metric's interval.
	Interval time.Duration
}

// samples are values of each placeholder's kind that Check parses the query
// with. Each is exactly as long as its placeholder, so that the positions in
// the parser's errors are those of the query as written.
var samples = map[string]string{
	PlaceholderNamespace: "namespace-abc", // {{namespace}}
	PlaceholderRoute:     "route-abc",     // {{route}}
	PlaceholderService:   "service-abc",   // {{service}}
	PlaceholderRevision:  "revision-abc",  // {{revision}}
	PlaceholderInterval:  "1h20m30s40ms",  // {{interval}}
}

// spot is where a placeholder stands in a query.
type spot int

const (
	inCode spot = iota
	inQuoted
	inRaw
	inComment
)

// Check checks a query as a CanaryRoute writes it: at most MaxQueryLength
// characters, only known placeholders, each where its value cannot change
// the query's structure, a shape and regular expressions within the bounds
// that keep the check cheap, and PromQL that parses, once each placeholder
// is replaced by a value of its kind, into an expression that can give one
// number (an instant vector or a scalar). The error says what is wrong,
// quoting at most fielderr.MaxValue characters.
//
// Every "{{" opens a placeholder, even inside a string or a comment.
// {{interval}} may stand anywhere (usually a range: [{{interval}}]); the
// others only inside a "..." or '...' string, or a comment: their values are
// text, escaped for a string literal, and only a string literal keeps them
// text. A backtick string takes no escapes, so a value there could end it:
// no placeholder may stand in one.
func Check(query string) error {
	if n, long := tooLong(query); long {
		return errors.Errorf(errFmtTooLong, n, MaxQueryLength)
	}
	regexes, err := scan(query)
	if err != nil {
		return err
	}
	// The regular expressions are checked here, and the parser gets a
	// stand-in of each: it would compile them, at a cost nothing else
	// bounds (regex.go).
	text, err := standIns(expand(query, func(name string) string { return samples[name] }), regexes)
	if err != nil {
		return err
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(text)
	if err != nil {
		return errors.Wrap(errors.New(fielderr.Cut(err.Error(), fielderr.MaxValue)), errDoesNotParse)
	}
	switch t := expr.Type(); t {
	case parser.ValueTypeVector, parser.ValueTypeScalar:
		return nil
	case parser.ValueTypeMatrix:
		return errors.Errorf(errFmtNotOneNumber, "range vector")
	default:
		return errors.Errorf(errFmtNotOneNumber, string(t))
	}
}

// tooLong reports whether a query is longer than MaxQueryLength characters,
// and how many it has. The XRD's maxLength counts characters, not bytes: a
// query in Greek has twice as many bytes.
func tooLong(query string) (int, bool) {
	if len(query) <= MaxQueryLength {
		return len(query), false // Never more characters than bytes.
	}
	n := utf8.RuneCountInString(query)
	return n, n > MaxQueryLength
}

// checks keeps what Check said of the queries checked last, by their
// content key. Prometheus's parser takes tens of milliseconds on the worst
// queries the XRD admits (4,096 characters of unary operators), and
// Crossplane sends the same spec run after run: ten such queries checked on
// every run made each take 250 ms. Its bound holds the queries of every
// spec that package xr keeps parsed (512 specs of at most 10 metrics), so a
// spec found parsed finds its queries checked; an entry is its key and the
// error's text (checkBytes), never the query.
var checks = memo.New[memo.Key, error](8192, 8<<20)

// CheckOnce is Check, done once per query text for as long as checks keeps
// it: every run of a spec whose metrics have not changed, and every
// CanaryRoute that writes the same query, finds it checked. What is kept is
// a function of the text alone: Check reads the query as written, its
// placeholders replaced by the same samples whatever the side, never by
// their values.
//
// Concurrent first checks of one query are one check: Crossplane runs a
// new spec's reconciles, and its several calls of one reconcile, in
// parallel, and each would otherwise pay for the same queries; the others
// wait for the first's answer.
func CheckOnce(query string) error {
	if _, long := tooLong(query); long {
		// Refused before the parser: nothing to save, and no key of
		// an oversized text kept.
		return Check(query)
	}
	key, _, _ := memo.Of(query) // A string always has a key.
	if err, ok := checks.Get(key); ok {
		return err
	}
	c, first := checking.start(key)
	if !first {
		<-c.done
		return c.err
	}
	// The check is kept before the others are let go, and a check that
	// panics (the parser is not ours) lets them go all the same.
	c.err = errors.New(errCheckUnfinished)
	defer checking.finish(key, c)
	c.err = checkQuery(query)
	checks.Add(key, c.err, checkBytes(c.err))
	return c.err
}

// checkQuery is Check, as CheckOnce calls it: a test counts its calls.
var checkQuery = Check

// checking is the checks under way, by the query's key.
var checking = inflight{calls: map[memo.Key]*check{}}

// inflight is checks under way, each shared by whoever asks for its query
// meanwhile.
type inflight struct {
	mu    sync.Mutex
	calls map[memo.Key]*check
}

// check is one check under way: done is closed once err holds its answer.
type check struct {
	done chan struct{}
	err  error
}

// start returns the check under way of a query's key, or starts one and
// reports that the caller makes it. A check that ended between the
// caller's look at the kept checks and now is found kept.
func (f *inflight) start(key memo.Key) (*check, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.calls[key]; ok {
		return c, false
	}
	if err, ok := checks.Get(key); ok {
		c := &check{done: make(chan struct{}), err: err}
		close(c.done)
		return c, false
	}
	c := &check{done: make(chan struct{})}
	f.calls[key] = c
	return c, true
}

// finish ends a check: it is no longer under way, and whoever waits for it
// has its answer.
func (f *inflight) finish(key memo.Key, c *check) {
	f.mu.Lock()
	delete(f.calls, key)
	f.mu.Unlock()
	close(c.done)
}

// checkBytes is what a check kept counts: the entry with its key, and the
// error's text with the values that wrap it.
func checkBytes(err error) uint64 {
	const entry = 128
	if err == nil {
		return entry
	}
	return entry + 2*uint64(len(err.Error()))
}

// Bounds of a query's shape, checked before Prometheus's parser sees it:
// the parser's time grows with the operators, and with the square of a
// chain of unary operators (4,096 characters of them take 30 ms, ten such
// queries a third of a second). Queries that people write stay far below:
// a ratio of two sums with a comparison has a dozen operators.
const (
	// maxOperators bounds the arithmetic, comparison and set operators,
	// the keywords (and, or, unless, atan2) as well as the symbols.
	maxOperators = 256
	// maxChain bounds operators in a row, such as "- - -x".
	maxChain = 8
	// maxDepth bounds the nesting of parentheses.
	maxDepth = 32
	// maxCommas bounds the commas of lists (labels, matchers, a
	// function's arguments): the parser records an error for each item
	// it cannot read ({a,a,...}, by(1,1,...)) and goes on, 400 bytes
	// each. A query that people write has a handful.
	maxCommas = 256
	// maxRanges bounds the ranges and subqueries ([5m], [1h:1m]) applied
	// one after the other with no operator, parenthesis or comma between
	// (x[1:][1:]): one is all PromQL takes (a subquery needs an instant
	// vector), and Prometheus's checkAST pays for each level's error
	// again at every level above it.
	maxRanges = 1
	// maxGroupingLabels bounds the labels of one on(), ignoring(),
	// group_left() or group_right(): the parser compares each label of
	// the first two with each of the last two, and records an error for
	// each pair that is equal (a million for 1,000 labels each).
	maxGroupingLabels = 32
)

// shape counts a query's operators, chains, parentheses and grouping
// labels as scan reads its code.
type shape struct {
	operators, chain, depth int
	// grouping is the keyword whose label list may follow, at byte
	// groupingAt; labels counts the labels of the list read, while inList.
	grouping   string
	groupingAt int
	inList     bool
	labels     int
	// last is the last code character read, other than a space or a
	// comment's #: a letter for a word. ranges counts the brackets of
	// ranges and subqueries in a row; commas, those of the query.
	last           byte
	ranges, commas int
}

// read counts the code character c at byte i: an operator character (of
// "+-*/%^=!<>"; "==" counts as two, a bound above anything legitimate all
// the same), a parenthesis, or what ends a chain (anything else but
// spaces). Words are read, whole, by word.
func (s *shape) read(c byte, i int) error {
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return nil
	}
	if err := s.listed(c); err != nil {
		return err
	}
	last := s.last
	if c != '#' {
		s.last = c
	}
	switch {
	case strings.IndexByte("+-*/%^=!<>", c) >= 0:
		s.ranges = 0
		return s.operator(i)
	case c == ',':
		// A list (of labels, matchers, arguments) may end in a comma,
		// never hold an empty item.
		if last == 0 || last == '(' || last == '{' || last == ',' {
			return errors.Errorf(errFmtEmptyItem, i, string(rune(max(last, ' '))))
		}
		s.commas++
		if s.commas > maxCommas {
			return errors.Errorf(errFmtTooManyCommas, maxCommas)
		}
		s.ranges, s.chain = 0, 0
	case c == '[':
		s.ranges++
		s.chain = 0
		if s.ranges > maxRanges {
			return errors.Errorf(errFmtRangeChain, maxRanges, i)
		}
	case c == '(':
		s.ranges = 0
		s.depth++
		if s.depth > maxDepth {
			return errors.Errorf(errFmtTooDeep, maxDepth, i)
		}
	case c == ')':
		s.ranges = 0
		s.depth = max(s.depth-1, 0)
		s.chain = 0
	default:
		s.chain = 0
	}
	return nil
}

// listed follows a grouping keyword's label list through the code
// character c: "(" opens it, ")" closes it, and a quote opens a label
// written as a string.
func (s *shape) listed(c byte) error {
	switch {
	case s.grouping != "" && !s.inList:
		// Only a label list may follow the keyword (group_left may
		// stand alone).
		s.inList, s.labels = c == '(', 0
		if !s.inList {
			s.grouping = ""
		}
	case s.inList && c == ')':
		s.inList, s.grouping = false, ""
	case s.inList && (c == '"' || c == '\'' || c == '`'):
		return s.label()
	}
	return nil
}

// operator counts an operator at byte i.
func (s *shape) operator(i int) error {
	s.operators++
	s.chain++
	if s.operators > maxOperators {
		return errors.Errorf(errFmtTooManyOps, maxOperators)
	}
	if s.chain > maxChain {
		return errors.Errorf(errFmtChain, maxChain, i)
	}
	return nil
}

// word counts the word (a name, a keyword, or the letters of a number,
// such as the "m" of 5m) of code at byte i: PromQL's keyword operators
// count as operators (case does not matter to PromQL), a grouping keyword
// opens its label list, and any other word ends a chain.
func (s *shape) word(w string, i int) error {
	s.last = 'a'
	if s.inList {
		return s.label()
	}
	s.grouping = ""
	switch kw := strings.ToLower(w); kw {
	case "and", "or", "unless", "atan2":
		s.ranges = 0
		return s.operator(i)
	case "on", "ignoring", "group_left", "group_right":
		s.grouping, s.groupingAt = kw, i
		s.chain = 0
	default:
		s.chain = 0
	}
	return nil
}

// label counts a label of a grouping list.
func (s *shape) label() error {
	s.labels++
	if s.labels > maxGroupingLabels {
		return errors.Errorf(errFmtTooManyLabels, s.grouping, s.groupingAt, maxGroupingLabels)
	}
	return nil
}

// isWordByte reports whether c may stand in a PromQL name (of a metric, a
// label, a function, a keyword) or a number.
func isWordByte(c byte) bool {
	return c == '_' || c == ':' || c == '.' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// isWordStart reports whether c begins a name.
func isWordStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// scan finds the placeholders of a query and checks each stands where its
// value cannot change the query's structure, and that its shape is within
// the bounds the parser's time allows. It follows PromQL's lexer as far as
// strings and comments go: "..." and '...' take backslash escapes, `...`
// none, and # comments end at a line's end (\n or \r). It returns where
// the string literal of each regular expression matcher (=~, !~) stands,
// at most maxRegexes of them.
func scan(query string) ([]span, error) {
	sc := scanner{query: query}
	for i := 0; i < len(query); {
		if strings.HasPrefix(query[i:], placeholderOpen) {
			name, end, err := placeholder(query, i)
			if err != nil {
				return nil, err
			}
			if err := placed(name, i, sc.ctx, sc.escaped); err != nil {
				return nil, err
			}
			sc.escaped = false
			i = end
			continue
		}
		next, err := sc.read(i)
		if err != nil {
			return nil, err
		}
		i = next
	}
	return sc.regexes, nil
}

// scanner is where scan stands in a query: in code, a string or a comment,
// and what the code read so far opens.
type scanner struct {
	query   string
	ctx     spot
	quote   byte
	escaped bool
	shape   shape
	// inWord: the last code byte was part of a name or a number, so a
	// letter continues it. regex: the last code was =~ or !~, so the next
	// string is a regular expression; inRegex: it opened at byte regexAt.
	inWord, regex, inRegex bool
	regexAt                int
	regexes                []span
}

// read reads the query from byte i, which no placeholder opens, and
// returns the byte after what it read: a word of code, or one byte.
func (sc *scanner) read(i int) (int, error) {
	c := sc.query[i]
	switch sc.ctx {
	case inCode:
		if isWordStart(c) && !sc.inWord {
			return sc.word(i)
		}
		if err := sc.code(c, i); err != nil {
			return 0, err
		}
	case inQuoted:
		switch {
		case sc.escaped:
			sc.escaped = false
		case c == '\\':
			sc.escaped = true
		case c == sc.quote:
			sc.ctx = inCode
		}
	case inRaw:
		if c == '`' {
			sc.ctx = inCode
		}
	case inComment:
		if c == '\n' || c == '\r' {
			sc.ctx = inCode
		}
	}
	if sc.inRegex && sc.ctx == inCode {
		// The regular expression's string closed with this byte.
		sc.regexes = append(sc.regexes, span{start: sc.regexAt, end: i + 1})
		sc.inRegex, sc.regex = false, false
	}
	return i + 1, nil
}

// word reads the word of code that begins at byte i.
func (sc *scanner) word(i int) (int, error) {
	end := i + 1
	for end < len(sc.query) && isWordByte(sc.query[end]) {
		end++
	}
	if err := sc.shape.word(sc.query[i:end], i); err != nil {
		return 0, err
	}
	sc.inWord, sc.regex = true, false
	return end, nil
}

// code reads the code byte c at byte i: what it opens (a string, a
// comment), whether it makes the next string a regular expression, and
// what it counts for the shape.
func (sc *scanner) code(c byte, i int) error {
	sc.inWord = isWordByte(c)
	opens := true
	switch c {
	case '"', '\'':
		sc.ctx, sc.quote = inQuoted, c
	case '`':
		sc.ctx = inRaw
	case '#':
		sc.ctx = inComment
	default:
		opens = false
	}
	switch {
	case opens && sc.regex && c != '#':
		if len(sc.regexes) == maxRegexes {
			return errors.Errorf(errFmtTooManyRegexes, maxRegexes, i)
		}
		sc.inRegex, sc.regexAt = true, i
	case c == '~' && i > 0 && (sc.query[i-1] == '=' || sc.query[i-1] == '!'):
		sc.regex = true
	case c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '#':
		// Spaces and comments may stand between =~ and its string.
		sc.regex = false
	}
	return sc.shape.read(c, i)
}

// placeholder reads the placeholder that opens at byte i: its name and the
// byte after it.
func placeholder(query string, i int) (string, int, error) {
	rest := query[i+len(placeholderOpen):]
	n := strings.Index(rest, placeholderClose)
	if n < 0 {
		return "", 0, errors.Errorf(errFmtUnclosed, placeholderOpen, i, placeholderClose)
	}
	name := rest[:n]
	end := i + len(placeholderOpen) + n + len(placeholderClose)
	if _, ok := samples[name]; !ok {
		// A "}}" far away is a typo's; quote what reads as the name.
		return "", 0, errors.Errorf(errFmtUnknown, fielderr.Quote(query[i:min(end, i+maxPlaceholderNameScan)]), i)
	}
	return name, end, nil
}

// placed checks that a placeholder may stand where it is.
func placed(name string, at int, ctx spot, escaped bool) error {
	p := placeholderOpen + name + placeholderClose
	switch {
	case escaped:
		return errors.Errorf(errFmtAfterBackslash, p, at)
	case ctx == inRaw:
		return errors.Errorf(errFmtInRawString, p, at)
	case name == PlaceholderInterval, ctx == inQuoted, ctx == inComment:
		// The interval's value is letters and digits: harmless anywhere.
		// A comment ends at a line's end, which escaping leaves out of
		// any value.
		return nil
	default:
		return errors.Errorf(errFmtOutsideString, p, at, p)
	}
}

// Expand replaces the placeholders of a query by their values: the interval
// as a PromQL duration (such as "1m" or "90s"), the others escaped for a
// PromQL string literal (backslash, both quotes, control and other
// non-printing characters, invalid UTF-8). Nothing else of the query
// changes; a value is never expanded again, whatever it holds.
func Expand(query string, v Values) string {
	return expand(query, func(name string) string {
		switch name {
		case PlaceholderNamespace:
			return Escape(v.Namespace)
		case PlaceholderRoute:
			return Escape(v.Route)
		case PlaceholderService:
			return Escape(v.Service)
		case PlaceholderRevision:
			return Escape(v.Revision)
		default: // PlaceholderInterval
			return Duration(v.Interval)
		}
	})
}

// expand replaces each known placeholder by value(name), in one pass.
func expand(query string, value func(name string) string) string {
	var b strings.Builder
	b.Grow(len(query))
	for {
		i := strings.Index(query, placeholderOpen)
		if i < 0 {
			b.WriteString(query)
			return b.String()
		}
		rest := query[i+len(placeholderOpen):]
		n := strings.Index(rest, placeholderClose)
		if n < 0 {
			b.WriteString(query)
			return b.String()
		}
		if _, ok := samples[rest[:n]]; !ok {
			// Not a placeholder (Check refuses it): keep it, and look
			// for the next from its second brace.
			b.WriteString(query[:i+1])
			query = query[i+1:]
			continue
		}
		b.WriteString(query[:i])
		b.WriteString(value(rest[:n]))
		query = rest[n+len(placeholderClose):]
	}
}

// Escape escapes s for a PromQL string literal in double or single quotes:
// the text between the quotes that PromQL reads back as s. PromQL takes a
// backslash escape only of the quote that opened the string, so both quotes
// become hex escapes (\x22, \x27), valid in either; a backslash becomes \\;
// newline, carriage return and tab their usual escapes; other control and
// non-printing characters \x, \u or \U escapes; and a byte that is not
// UTF-8 a \x escape, which PromQL reads back as that byte.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			escapeRune(&b, r, s[i:i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether s holds anything Escape changes.
func needsEscape(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// escapeRune writes r, whose UTF-8 is text, escaped for a PromQL string.
func escapeRune(b *strings.Builder, r rune, text string) {
	switch {
	case r == '\\':
		b.WriteString(`\\`)
	case r == '"', r == '\'':
		fmt.Fprintf(b, `\x%02x`, r)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < ' ' || r == 0x7f:
		fmt.Fprintf(b, `\x%02x`, r)
	case r == utf8.RuneError:
		// PromQL's lexer reads U+FFFD written out as invalid UTF-8.
		b.WriteString(`\ufffd`)
	case r == ' ' || unicode.IsPrint(r):
		b.WriteString(text)
	case r <= 0xffff:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}

// Duration writes d as a PromQL duration in its largest whole unit: "1m",
// "90s", "1500ms", "1d". PromQL durations count milliseconds: less is
// dropped. Zero (or less) is "0s".
func Duration(d time.Duration) string {
	ms := d.Milliseconds()
	if ms <= 0 {
		return "0s"
	}
	for _, u := range []struct {
		ms   int64
		unit string
	}{{24 * 3600 * 1000, "d"}, {3600 * 1000, "h"}, {60 * 1000, "m"}, {1000, "s"}} {
		if ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.unit
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}
