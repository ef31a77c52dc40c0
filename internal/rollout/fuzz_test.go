package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// FuzzDecide builds an input from the fuzzer's bytes: steps, weights,
// pauses, gates, the gateway's answer, and a previous status with anything
// in it (steps beyond the list or negative, weights that are not percents,
// missing or zero times, unknown phases). The first byte chooses between a
// spec that xr.Parse accepts, for which every invariant of the property
// tests must hold, and one it would refuse (weights and pauses of any
// value), for which Decide must still not panic, must be deterministic, and
// must keep the weights adding up to 100 with nothing to the canary when
// Failed or Aborted.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("progressive rollout with gates and a previous status"))
	f.Add([]byte{1, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 128, 64, 32, 16, 8, 4, 2, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		raw := b[0]%4 == 1
		src := &byteSource{b: b[1:]}
		var in Input
		if raw {
			in = genRawInput(src)
		} else {
			in = genInput(src)
		}

		d := Decide(in)
		if diff := cmp.Diff(d, Decide(in)); diff != "" {
			t.Fatalf("%s\nnot deterministic: -first, +second:\n%s", describe(in), diff)
		}
		var v []string
		if raw {
			s := d.Status
			if s.CanaryWeight.Hundredths()+s.PrimaryWeight.Hundredths() != percent.Max.Hundredths() || !d.CanaryWeight.Equal(s.CanaryWeight) {
				v = append(v, "weights do not add up to 100")
			}
			if (s.Phase == "Failed" || s.Phase == "Aborted") && (!d.CanaryWeight.IsZero() || d.Active) {
				v = append(v, "canary traffic while "+string(s.Phase))
			}
		} else {
			v = append(violations(in, d), rerunViolations(in, d)...)
		}
		if len(v) > 0 {
			t.Fatalf("%s\ndecision %+v\n%v", describe(in), d.Status, v)
		}
	})
}
