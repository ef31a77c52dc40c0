package promql

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// PlaceholderQuery stands, in a web provider's URL, for the metric's query,
// its own placeholders expanded.
const PlaceholderQuery = "query"

const (
	// MaxURLLength is the most bytes of a web provider's URL, as written.
	MaxURLLength = 2048
	// MaxJSONPathLength is the most bytes of a web provider's jsonPath.
	MaxJSONPathLength = 1024
	// maxWebValues bounds the JSON values of a web provider's answer: it
	// is decoded whole for the jsonPath to walk, at about 160 bytes and 2
	// allocations a value, and a run sends up to 20 queries at once. An
	// answer at the bound, walked by a filter, costs 3.3 MB and 13 ms
	// (BenchmarkWebAnswerWorst); 1 MiB of 54,000 values cost 8.7 MB to
	// decode alone. An SLO or metrics API's answer holds a few dozen.
	maxWebValues = 1 << 14

	errFmtURLUnknown        = "unknown placeholder %s at byte %d; known: {{namespace}}, {{route}}, {{service}}, {{revision}}, {{interval}}, {{query}}"
	errFmtURLInAuthority    = "placeholder %s at byte %d stands in the URL's scheme or host: queries go only to the host the Input writes"
	errURLFragment          = "it holds a fragment, which is never sent"
	errJSONPathOneTemplate  = "must be one {...} expression, such as {.data.ratio}, with no text around it and no range or end"
	errJSONPathRecursive    = "must name its path: a recursive descent (..) walks every value of the answer, at ten times the cost of decoding it"
	errFmtJSONPath          = "is not kubectl's JSONPath: %s"
	whyFmtTooManyValues     = "an answer of more than %d JSON values"
	whyFmtJSONPathError     = "the jsonPath %s finds no value: %s"
	whyFmtJSONPathCount     = "the jsonPath %s selects %d values; it must select one number"
	whyFmtJSONPathNotNumber = "the jsonPath %s selects %s, not a number"
	whyFmtJSONPathPanic     = "the jsonPath %s cannot be evaluated on the answer: %v"
)

// webAPI is a web provider: GET of its URL (filled by Request), the bearer
// token or basic auth of its credentials, and an answer of JSON whose one
// number its jsonPath selects.
type webAPI struct {
	jsonPath string
}

func (webAPI) endpoint(p Provider, _ string, _ time.Time) (string, error) {
	u, err := base(p.Address)
	if err != nil {
		return "", err
	}
	if u.Fragment != "" {
		return "", errors.New(errURLFragment)
	}
	return p.Address, nil
}

// authorize sends the bearer token, or basic auth, as a Prometheus
// provider does.
func (webAPI) authorize(req *http.Request, a Auth) {
	prometheusAPI{}.authorize(req, a)
}

// httpError quotes the start of the body: a web endpoint's errors have no
// one shape.
func (webAPI) httpError(status int, body []byte, secrets redact.Secrets) string {
	return fmt.Sprintf(whyFmtHTTP, status, secrets.Quote(string(body)))
}

// answer reads the answer as JSON and selects its one number with the
// jsonPath: a JSON number, or a string that holds one (many APIs write
// numbers as strings). Nothing selected, several values, a list, an
// object, a boolean, null, a string of no number, NaN or ±Inf is no data,
// and says which; an answer that is no JSON, or holds more than
// maxWebValues values, is an error.
func (w webAPI) answer(body []byte, secrets redact.Secrets) (v float64, why, outcome string) {
	if n := jsonValues(body); n > maxWebValues {
		return 0, fmt.Sprintf(whyFmtTooManyValues, maxWebValues), OutcomeError
	}
	var data any
	if err := json.Unmarshal(body, &data); err != nil {
		return 0, fmt.Sprintf(whyFmtInvalid, invalid(webJSON, err, body, secrets)), OutcomeError
	}
	jp, err := ParseJSONPath(w.jsonPath)
	if err != nil {
		// The policy refuses such a jsonPath: only a Provider made by
		// hand gets here.
		return 0, "the jsonPath " + err.Error(), OutcomeError
	}
	path := fielderr.Quote(w.jsonPath)
	defer func() {
		// The JSONPath evaluator is not ours, and the answer is the
		// provider's: a panic here would end the process, since queries
		// run in goroutines of their own.
		if r := recover(); r != nil {
			v, why, outcome = 0, fmt.Sprintf(whyFmtJSONPathPanic, path, secrets.Cut(fmt.Sprint(r))), OutcomeError
		}
	}()
	found, err := jp.FindResults(data)
	if err != nil {
		// A key the answer lacks: the answer's shape, not the jsonPath.
		return 0, fmt.Sprintf(whyFmtJSONPathError, path, secrets.Cut(err.Error())), OutcomeNoData
	}
	var values []reflect.Value
	for _, r := range found {
		values = append(values, r...)
	}
	if len(values) != 1 {
		return 0, fmt.Sprintf(whyFmtJSONPathCount, path, len(values)), OutcomeNoData
	}
	return number(path, values[0], secrets)
}

// number reads a value the jsonPath selected: a JSON number, or a string
// that holds one, when finite.
func number(path string, v reflect.Value, secrets redact.Secrets) (float64, string, string) {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "null"), OutcomeNoData
		}
		v = v.Elem()
	}
	var f float64
	switch {
	case !v.IsValid():
		return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "null"), OutcomeNoData
	case v.Kind() == reflect.Float64:
		f = v.Float()
	case v.Kind() == reflect.String:
		var err error
		f, err = strconv.ParseFloat(strings.TrimSpace(v.String()), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "the string "+secrets.Quote(v.String())), OutcomeNoData
		}
	case v.Kind() == reflect.Map:
		return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "an object"), OutcomeNoData
	case v.Kind() == reflect.Slice:
		return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "a list"), OutcomeNoData
	case v.Kind() == reflect.Bool:
		return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "a boolean"), OutcomeNoData
	default:
		return 0, fmt.Sprintf(whyFmtJSONPathNotNumber, path, "a "+v.Kind().String()), OutcomeNoData
	}
	switch {
	case math.IsNaN(f):
		return 0, fmt.Sprintf(whyFmtNotNumber, "NaN"), OutcomeNoData
	case math.IsInf(f, 1):
		return 0, fmt.Sprintf(whyFmtNotNumber, "+Inf"), OutcomeNoData
	case math.IsInf(f, -1):
		return 0, fmt.Sprintf(whyFmtNotNumber, "-Inf"), OutcomeNoData
	}
	return f, "", OutcomeOK
}

// jsonValues counts the values of a JSON text, about: the commas, colons
// and openings outside strings, one more. It reads each byte once, so
// that an answer too large to decode whole is refused at the cost of a
// scan.
func jsonValues(body []byte) int {
	n, inString, escaped := 1, false, false
	for _, c := range body {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == '[' || c == '{'):
			n++
		}
	}
	return n
}

// ParseJSONPath reads a web provider's jsonPath, in kubectl's syntax: one
// {...} expression, such as {.data.ratio} or {.data.result[0].value[1]},
// with no text around it (which would be a value of its own), no range or
// end, and no recursive descent (..), which copies every value of the
// answer it walks: {..ratio} cost 82 MB and 170 ms on an answer of 1 MiB
// that {.items[*].v} walks for 14 MB. A key the answer lacks is an error,
// never an empty selection.
func ParseJSONPath(text string) (*jsonpath.JSONPath, error) {
	parsed, err := jsonpath.Parse("jsonPath", text)
	if err != nil {
		return nil, errors.Errorf(errFmtJSONPath, fielderr.Cut(err.Error(), fielderr.MaxValue))
	}
	if len(parsed.Root.Nodes) != 1 || parsed.Root.Nodes[0].Type() != jsonpath.NodeList {
		return nil, errors.New(errJSONPathOneTemplate)
	}
	for _, n := range parsed.Root.Nodes[0].(*jsonpath.ListNode).Nodes {
		if n.Type() == jsonpath.NodeIdentifier || n.Type() == jsonpath.NodeText {
			return nil, errors.New(errJSONPathOneTemplate)
		}
	}
	if recursive(parsed.Root) {
		return nil, errors.New(errJSONPathRecursive)
	}
	jp := jsonpath.New("jsonPath").AllowMissingKeys(false)
	if err := jp.Parse(text); err != nil {
		return nil, errors.Errorf(errFmtJSONPath, fielderr.Cut(err.Error(), fielderr.MaxValue))
	}
	return jp, nil
}

// recursive reports whether a JSONPath's tree holds a recursive descent,
// in its path, a filter's operands or a union's members.
func recursive(n jsonpath.Node) bool {
	switch n := n.(type) {
	case *jsonpath.RecursiveNode:
		return true
	case *jsonpath.ListNode:
		return slices.ContainsFunc(n.Nodes, recursive)
	case *jsonpath.FilterNode:
		return recursive(n.Left) || recursive(n.Right)
	case *jsonpath.UnionNode:
		return slices.ContainsFunc(n.Nodes, func(l *jsonpath.ListNode) bool { return recursive(l) })
	default:
		return false
	}
}

// CheckURL checks a web provider's URL as the Input writes it: at most
// MaxURLLength bytes; an http or https URL of a host, without credentials
// or a fragment; only known placeholders ({{query}} and the metrics'),
// each closed, none in the scheme or the host: FillURL fills each where it
// stands, in the path or the query, and the host is always the one
// written.
func CheckURL(template string) error {
	if len(template) > MaxURLLength {
		return errors.Errorf("it is %d bytes, more than %d", len(template), MaxURLLength)
	}
	authority := authorityEnd(template)
	sample := strings.Builder{}
	last := 0
	for i := 0; ; {
		j := strings.Index(template[i:], placeholderOpen)
		if j < 0 {
			break
		}
		at := i + j
		rest := template[at+len(placeholderOpen):]
		n := strings.Index(rest, placeholderClose)
		if n < 0 {
			return errors.Errorf(errFmtUnclosed, placeholderOpen, at, placeholderClose)
		}
		end := at + len(placeholderOpen) + n + len(placeholderClose)
		name := rest[:n]
		if _, ok := samples[name]; !ok && name != PlaceholderQuery {
			return errors.Errorf(errFmtURLUnknown, fielderr.Quote(template[at:min(end, at+maxPlaceholderNameScan)]), at)
		}
		if at < authority {
			return errors.Errorf(errFmtURLInAuthority, fielderr.Quote(template[at:end]), at)
		}
		sample.WriteString(template[last:at])
		sample.WriteString("x")
		last, i = end, end
	}
	sample.WriteString(template[last:])
	u, err := base(sample.String())
	if err != nil {
		return err
	}
	if u.Fragment != "" || strings.Contains(template, "#") {
		return errors.New(errURLFragment)
	}
	return nil
}

// authorityEnd is the byte of a URL's text where its scheme and host end:
// the first "/", "?" or "#" after "://"; 0 when there is no "://" (no URL
// the policy accepts).
func authorityEnd(u string) int {
	i := strings.Index(u, "://")
	if i < 0 {
		return 0
	}
	j := strings.IndexAny(u[i+len("://"):], "/?#")
	if j < 0 {
		return len(u)
	}
	return i + len("://") + j
}

// FillURL fills a web provider's URL, which CheckURL accepted, for the side
// v measures: {{query}} with the metric's query (its own placeholders
// expanded), the others with their values; in the path each escaped as a
// path segment (url.PathEscape, a "/" too, and a value of only dots
// escaped, so that no value climbs the path), in the query as a query
// value (url.QueryEscape: no value adds a parameter or ends the query).
// The text around the placeholders is left as written. A value is never
// filled again.
func FillURL(template string, v Values, query string) string {
	queryStart := len(template)
	if q := strings.IndexByte(template[authorityEnd(template):], '?'); q >= 0 {
		queryStart = authorityEnd(template) + q
	}
	var b strings.Builder
	b.Grow(len(template) + len(query))
	for i := 0; ; {
		j := strings.Index(template[i:], placeholderOpen)
		if j < 0 {
			b.WriteString(template[i:])
			return b.String()
		}
		at := i + j
		rest := template[at+len(placeholderOpen):]
		n := strings.Index(rest, placeholderClose)
		if n < 0 {
			b.WriteString(template[i:])
			return b.String()
		}
		name := rest[:n]
		var value string
		switch _, known := samples[name]; {
		case name == PlaceholderQuery:
			value = query
		case known:
			value = raw(name, v)
		default:
			// Not a placeholder (CheckURL refuses it): keep it, and
			// look for the next from its second brace.
			b.WriteString(template[i : at+1])
			i = at + 1
			continue
		}
		b.WriteString(template[i:at])
		if at >= queryStart {
			b.WriteString(url.QueryEscape(value))
		} else {
			b.WriteString(pathEscape(value))
		}
		i = at + len(placeholderOpen) + n + len(placeholderClose)
	}
}

// pathEscape escapes a value for a path segment: url.PathEscape, which
// escapes "/", and a value of only dots ("." or "..") with its dots
// escaped too, which a server would otherwise read as a step up the path.
func pathEscape(s string) string {
	e := url.PathEscape(s)
	if strings.Trim(e, ".") == "" && e != "" {
		return strings.Repeat("%2E", len(e))
	}
	return e
}
