package xr

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseStatus reads the status the function wrote on an earlier run. The
// function owns these fields, but a user (or a bad restore) can still write
// anything there, so a status that does not decode is an error rather than
// a silent restart of the rollout.
func parseStatus(obj map[string]any) (Status, field.ErrorList) {
	var s Status
	raw, ok := obj["status"].(map[string]any)
	if !ok {
		return s, nil
	}
	own := map[string]any{}
	for _, k := range []string{"rollout", "route"} {
		if v, ok := raw[k]; ok {
			own[k] = v
		}
	}
	b, err := json.Marshal(own)
	if err != nil {
		return s, field.ErrorList{field.Invalid(field.NewPath("status"), nil, err.Error())}
	}
	// Not strict: fields that a newer release of the function may add must
	// not break an older one during a rollback.
	if err := json.Unmarshal(b, &s); err != nil {
		return Status{}, field.ErrorList{field.Invalid(field.NewPath("status"), nil, decodeMessage(err))}
	}
	return s, nil
}
