package route

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// combine is the cross product of a rule's matches and the A/B matches:
// merge adds the conditions of A/B match j to a copy of the rule's match i.
// HTTPRoute and GRPCRoute differ only in what a match holds.
func combine[M any, PM interface {
	*M
	DeepCopyInto(out *M)
}](path *field.Path, rule, ab []M, merge func(i, j int, m *M, a M) field.ErrorList,
) ([]M, field.ErrorList) {
	if n := len(rule) * len(ab); n > maxMatchesPerRule {
		return nil, field.ErrorList{tooMany(path, "matches in a rule's A/B companion", n, maxMatchesPerRule,
			fmt.Sprintf(": each of the rule's %d matches is combined with each of the %d A/B matches", len(rule), len(ab)))}
	}
	var errs field.ErrorList
	out := make([]M, 0, len(rule)*len(ab))
	for i := range rule {
		for j := range ab {
			// Copies of both, so the route never shares memory with the
			// spec: merge appends the A/B match's conditions, pointers and
			// all.
			var m, a M
			PM(&rule[i]).DeepCopyInto(&m)
			PM(&ab[j]).DeepCopyInto(&a)
			errs = append(errs, merge(i, j, &m, a)...)
			out = append(out, m)
		}
	}
	return out, errs
}

// appendConditions adds an A/B match's header or query parameter conditions
// to a rule's match. These lists are keyed by name: a name that the rule's
// match already has would be a duplicate key, so it is an error naming both.
// Header names compare case-insensitively, as HTTP does.
func appendConditions[C any](existing, add []C, name func(C) string, fold bool, addPath, existingPath *field.Path) ([]C, field.ErrorList) {
	var errs field.ErrorList
	same := func(a, b string) bool { return a == b }
	if fold {
		same = strings.EqualFold
	}
	for k, c := range add {
		for l, e := range existing {
			if same(name(e), name(c)) {
				errs = append(errs, field.Duplicate(addPath.Index(k).Child("name"),
					fmt.Sprintf("%s (already matched by %s)", name(c), existingPath.Index(l))))
			}
		}
	}
	return append(existing, add...), errs
}
