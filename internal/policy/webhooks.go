package policy

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
)

const (
	errFmtNoCredentials = "the pipeline step hands no credentials %s"
	errFmtCredentials   = "credentials %s"
)

// A Webhook is an address that hooks call: the hook client's webhook (its
// name, timeout and format, and its URL when the Input writes it), or,
// for a URL that is a secret, the credentials and key that hold it, which
// Resolve reads on each run.
type Webhook struct {
	hooks.Webhook
	// URLFrom, when not nil, names the pipeline step's credentials and
	// the key that hold the URL.
	URLFrom *v1beta1.WebhookURLSource
}

// Resolve is the webhook as a run calls it: its URL read from the pipeline
// step's credentials when it is a secret (credentials: the step's
// credentials of a name, as Crossplane hands them). The error names the
// webhook, the credentials and the key, never the URL.
func (w Webhook) Resolve(credentials func(name string) (map[string][]byte, error)) (hooks.Webhook, error) {
	if w.URLFrom == nil {
		return w.Webhook, nil
	}
	if credentials == nil {
		return hooks.Webhook{}, errors.Errorf(errFmtNoCredentials, fielderr.Quote(w.URLFrom.Credentials))
	}
	data, err := credentials(w.URLFrom.Credentials)
	if err != nil {
		return hooks.Webhook{}, errors.Wrapf(errors.New(fielderr.Cut(err.Error(), fielderr.MaxValue)), errFmtCredentials, fielderr.Quote(w.URLFrom.Credentials))
	}
	u, err := hooks.URLFrom(data, w.URLFrom.Key)
	if err != nil {
		return hooks.Webhook{}, errors.Wrapf(err, errFmtCredentials, fielderr.Quote(w.URLFrom.Credentials))
	}
	resolved := w.Webhook
	resolved.URL, resolved.Secret = u, true
	return resolved, nil
}

// webhooks reads the webhooks: each a DNS-1123 name, exactly one of an
// http or https URL without credentials and a key of the pipeline step's
// credentials, a timeout of at most 10s, and a known format.
func webhooks(path *field.Path, in []v1beta1.Webhook) (map[string]Webhook, field.ErrorList) {
	var errs field.ErrorList
	out := make(map[string]Webhook, len(in))
	for i, wh := range in {
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(wh.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), wh.Name, msg))
		}
		if _, dup := out[wh.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), wh.Name))
		}
		w := Webhook{Webhook: hooks.Webhook{Name: wh.Name, URL: wh.URL, Timeout: hooks.DefaultTimeout, Format: hooks.FormatGeneric}}
		switch {
		case wh.URL == "" && wh.URLFrom == nil:
			errs = append(errs, field.Required(p, "a webhook has exactly one of url and urlFrom"))
		case wh.URL != "" && wh.URLFrom != nil:
			errs = append(errs, field.Forbidden(p.Child("urlFrom"), "a webhook has exactly one of url and urlFrom: this one also has url"))
		case wh.URLFrom != nil:
			w.URLFrom = wh.URLFrom
			errs = append(errs, urlFrom(p.Child("urlFrom"), wh.URLFrom)...)
		default:
			if err := hooks.CheckURL(wh.URL); err != nil {
				errs = append(errs, field.Invalid(p.Child("url"), fielderr.Cut(wh.URL, fielderr.MaxValue), "must be an http or https URL: "+err.Error()))
			}
		}
		if t := wh.Timeout; t != "" {
			d, err := time.ParseDuration(t)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(p.Child("timeout"), t, "must be a duration such as 5s"))
			case d <= 0 || d > hooks.MaxTimeout:
				errs = append(errs, field.Invalid(p.Child("timeout"), t, "must be above 0 and at most "+hooks.MaxTimeout.String()))
			default:
				w.Timeout = d
			}
		}
		if f := hooks.Format(wh.Format); f != "" {
			if !slices.Contains(hooks.Formats, f) {
				errs = append(errs, field.NotSupported(p.Child("format"), f, hooks.Formats))
			}
			w.Format = f
		}
		out[wh.Name] = w
	}
	return out, errs
}

// urlFrom checks the credentials and key a secret URL is read from.
func urlFrom(path *field.Path, in *v1beta1.WebhookURLSource) field.ErrorList {
	var errs field.ErrorList
	if in.Credentials == "" {
		errs = append(errs, field.Required(path.Child("credentials"), "the pipeline step's credentials that hold the URL"))
	}
	errs = append(errs, credentials(path.Child("credentials"), in.Credentials)...)
	if in.Key == "" {
		return append(errs, field.Required(path.Child("key"), "the key of the credentials that holds the URL"))
	}
	for _, msg := range validation.IsConfigMapKey(in.Key) {
		errs = append(errs, field.Invalid(path.Child("key"), in.Key, msg))
	}
	return errs
}
