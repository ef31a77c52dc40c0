package promql

import (
	"crypto/x509"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// Keys of the credentials a provider's queries authenticate with: the keys
// of the Secret that the pipeline step hands the function.
const (
	KeyToken    = "token"
	KeyUsername = "username"
	KeyPassword = "password"
	KeyCA       = "ca.crt"
	// KeyAPIKey and KeyAppKey are a Datadog provider's keys, sent as the
	// DD-API-KEY and DD-APPLICATION-KEY headers.
	KeyAPIKey = "apiKey"
	KeyAppKey = "appKey"
)

const (
	errEmptyCredentials = "credentials hold none of the keys token, username and password, ca.crt"
	errFmtUnknownKeys   = "credentials hold unknown keys %s; known: token (a bearer token), username and password (basic auth), ca.crt (PEM)"
	errMixed            = "credentials hold both a token and a username or password: give a token (bearer) or a username and password (basic), not both"
	errFmtEmptyKey      = "credentials' %s is empty"
	errFmtMissingKey    = "credentials hold %s without %s: basic auth needs both"
	errColonUsername    = "credentials' username holds a colon, which basic auth cannot carry"
	errFmtNotHeaderSafe = "credentials' %s holds a control character, which an HTTP header cannot carry"
	errNoCertificate    = "credentials' ca.crt holds no PEM certificate"
	errFmtDatadogKeys   = "credentials hold unknown keys %s; a Datadog provider's hold apiKey and appKey"
	errFmtDatadogNeeds  = "credentials hold no %s: a Datadog provider's hold apiKey and appKey"
)

// Auth is how queries authenticate: a bearer token, or basic auth; an
// optional CA bundle for https.
type Auth struct {
	// BearerToken, when not empty, is sent as "Authorization: Bearer".
	BearerToken string
	// Username and Password, when Username is not empty, are sent as basic
	// auth.
	Username string
	Password string
	// CA, when not empty, holds the PEM certificates that an https
	// provider's certificate must chain to, instead of the system's roots.
	CA []byte
	// APIKey and AppKey, when not empty, are a Datadog provider's keys,
	// sent as the DD-API-KEY and DD-APPLICATION-KEY headers.
	APIKey string
	AppKey string
}

// Secrets are the credentials a query with this auth sends, in every form
// the function sends them, for redact to keep them out of whatever the
// provider answers: the token (sent as "Bearer <token>"), or the password,
// user:password and its base64 (sent as "Basic <base64>", as net/http's
// SetBasicAuth encodes it; looked for unpadded and in the URL alphabet
// too, redact.Base64). The username alone is no secret: redacting it
// would leave every reason that names the user unreadable.
//
// Datadog's keys are sent as they are, each a header of its own.
func (a Auth) Secrets() redact.Secrets {
	sent := []string{a.BearerToken, a.APIKey, a.AppKey}
	if a.Username != "" {
		basic := a.Username + ":" + a.Password
		sent = append(append(sent, a.Password, basic), redact.Base64(basic)...)
	}
	return redact.New(sent...)
}

// AuthFrom reads credentials as the provider's kind takes them: a Datadog
// provider's with DatadogAuthFrom, the others' with AuthFrom.
func (p Provider) AuthFrom(data map[string][]byte) (Auth, error) {
	if p.Kind == KindDatadog {
		return DatadogAuthFrom(data)
	}
	return AuthFrom(data)
}

// DatadogAuthFrom reads a Datadog provider's credentials: "apiKey" and
// "appKey", both, and nothing else (the API refuses a query without
// either, and a typo such as api-key would otherwise send none). An
// empty value or one an HTTP header cannot carry is an error, which names
// keys, never values; one line end that ends a value is dropped.
func DatadogAuthFrom(data map[string][]byte) (Auth, error) {
	var unknown []string
	for k := range data {
		if k != KeyAPIKey && k != KeyAppKey {
			unknown = append(unknown, fielderr.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Auth{}, errors.Errorf(errFmtDatadogKeys, fielderr.List(unknown, ", "))
	}
	a := Auth{}
	for _, k := range []string{KeyAPIKey, KeyAppKey} {
		v, ok := data[k]
		if !ok {
			return Auth{}, errors.Errorf(errFmtDatadogNeeds, k)
		}
		text := chomp(v)
		if text == "" {
			return Auth{}, errors.Errorf(errFmtEmptyKey, k)
		}
		if err := headerSafe(k, text); err != nil {
			return Auth{}, err
		}
		if k == KeyAPIKey {
			a.APIKey = text
		} else {
			a.AppKey = text
		}
	}
	return a, nil
}

// AuthFrom reads credentials as Crossplane hands them to a function (the
// Data of function-sdk-go's resource.Credentials, the keys of a Secret):
// "token" (bearer), or "username" and "password" (basic), and "ca.crt"
// (PEM), alone or with either. Any other key, a token with a username or
// password, a username without a password (or the reverse), an empty value
// or a ca.crt without a certificate is an error, which names keys, never
// values. One line end that ends a value is dropped: files written by echo
// end with one, and a header would refuse it.
func AuthFrom(data map[string][]byte) (Auth, error) {
	if err := checkKeys(data); err != nil {
		return Auth{}, err
	}
	a, err := identity(data)
	if err != nil {
		return Auth{}, err
	}
	if ca, ok := data[KeyCA]; ok {
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return Auth{}, errors.New(errNoCertificate)
		}
		a.CA = slices.Clone(ca)
	}
	return a, nil
}

// checkKeys checks that credentials hold known keys only, at least one, and
// none empty.
func checkKeys(data map[string][]byte) error {
	var unknown []string
	for k := range data {
		if k != KeyToken && k != KeyUsername && k != KeyPassword && k != KeyCA {
			unknown = append(unknown, fielderr.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return errors.Errorf(errFmtUnknownKeys, fielderr.List(unknown, ", "))
	}
	if len(data) == 0 {
		return errors.New(errEmptyCredentials)
	}
	for _, k := range []string{KeyToken, KeyUsername, KeyPassword, KeyCA} {
		if v, ok := data[k]; ok && chomp(v) == "" {
			return errors.Errorf(errFmtEmptyKey, k)
		}
	}
	return nil
}

// identity reads who the queries authenticate as: a bearer token, basic
// auth, or nobody.
func identity(data map[string][]byte) (Auth, error) {
	token, hasToken := data[KeyToken]
	username, hasUsername := data[KeyUsername]
	password, hasPassword := data[KeyPassword]
	switch {
	case hasToken && (hasUsername || hasPassword):
		return Auth{}, errors.New(errMixed)
	case hasToken:
		a := Auth{BearerToken: chomp(token)}
		if err := headerSafe(KeyToken, a.BearerToken); err != nil {
			return Auth{}, err
		}
		return a, nil
	case hasUsername && !hasPassword:
		return Auth{}, errors.Errorf(errFmtMissingKey, KeyUsername, KeyPassword)
	case hasPassword && !hasUsername:
		return Auth{}, errors.Errorf(errFmtMissingKey, KeyPassword, KeyUsername)
	case hasUsername:
		a := Auth{Username: chomp(username), Password: chomp(password)}
		if strings.Contains(a.Username, ":") {
			return Auth{}, errors.New(errColonUsername)
		}
		return a, nil
	default:
		return Auth{}, nil
	}
}

// chomp drops one line end ("\n" or "\r\n") that ends b.
func chomp(b []byte) string {
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	return s
}

// headerSafe checks that a bearer token can stand in a header. Basic auth
// is base64 encoded, so any byte goes there.
func headerSafe(key, v string) error {
	for _, c := range []byte(v) {
		if c < ' ' || c == 0x7f {
			return errors.Errorf(errFmtNotHeaderSafe, key)
		}
	}
	return nil
}
